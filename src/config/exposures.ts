import type { Exposure, ExposureStore } from "./storage/exposure-store.js";

export type { Exposure } from "./storage/exposure-store.js";

/**
 * Where exposures go: a player's first variant of each experiment, recorded once whatever the concurrency. The one
 * seam of exposure recording: what else follows an exposure (the player joining the variant's cohort) plugs in here.
 */
export interface ExposureRecorder {
  /** The variant recorded for the player in each of `experiments` that has one. */
  recorded(projectId: string, identityKey: string, experiments: readonly string[]): Promise<Map<string, string>>;
  /**
   * Records each exposure (the player has none recorded for its experiment when asked); answers the variant now
   * recorded for each: its own, or that of a call that recorded one first.
   */
  record(
    projectId: string,
    identityKey: string,
    exposures: readonly Exposure[],
    at: Date,
  ): Promise<Map<string, string>>;
}

/** Exposures this instance remembers; past it the oldest are forgotten (and read again when asked). */
const REMEMBERED = 100_000;

/**
 * Exposures in the database (ExposureStore), the ones this instance saw remembered: a recorded exposure never
 * changes, so a repeat launch of an exposed player reads nothing.
 */
export class StoredExposures {
  /** Variant by `<project>/<experiment>/<identity key>`, oldest first. */
  private readonly known = new Map<string, string>();

  constructor(private readonly store: ExposureStore) {}

  async recorded(projectId: string, identityKey: string, experiments: readonly string[]): Promise<Map<string, string>> {
    const variants = new Map<string, string>();
    const unknown: string[] = [];
    for (const experiment of experiments) {
      const variant = this.known.get(knownKey(projectId, experiment, identityKey));
      if (variant === undefined) unknown.push(experiment);
      else variants.set(experiment, variant);
    }
    if (unknown.length > 0) {
      const read = await this.store.recorded(projectId, identityKey, unknown);
      for (const [experiment, variant] of read) this.remember(projectId, experiment, identityKey, variant, variants);
    }
    return variants;
  }

  /** ExposureRecorder.record, and the exposures this call inserted (not those another call recorded first). */
  async record(projectId: string, identityKey: string, exposures: readonly Exposure[], at: Date) {
    const variants = new Map<string, string>();
    const first = await this.store.insert(projectId, identityKey, exposures, at);
    const earlier = first.length > 0 ? await this.store.recorded(projectId, identityKey, first) : new Map();
    for (const { experiment, variant } of exposures) {
      this.remember(projectId, experiment, identityKey, earlier.get(experiment) ?? variant, variants);
    }
    return { variants, inserted: exposures.filter(({ experiment }) => !first.includes(experiment)) };
  }

  /** Forgets what this instance remembers of the players' exposures to `experiments` (an erasure deleted them). */
  forget(projectId: string, identityKeys: readonly string[], experiments: readonly string[]): void {
    for (const key of identityKeys) {
      for (const experiment of experiments) this.known.delete(knownKey(projectId, experiment, key));
    }
  }

  private remember(
    projectId: string,
    experiment: string,
    identityKey: string,
    variant: string,
    to: Map<string, string>,
  ) {
    to.set(experiment, variant);
    this.known.set(knownKey(projectId, experiment, identityKey), variant);
    if (this.known.size > REMEMBERED) this.known.delete(this.known.keys().next().value!);
  }
}

const knownKey = (projectId: string, experiment: string, identityKey: string) =>
  `${projectId}/${experiment}/${identityKey}`;
