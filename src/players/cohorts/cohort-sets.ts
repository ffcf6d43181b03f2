import { projectScopedId } from "../../db/ids.js";
import { Bitmap, byChunk, CHUNK_BITS, joined } from "../../sets/bitmap.js";
import type { ChunkStore } from "../../sets/chunk-store.js";
import type { PlayerNumbers } from "../../sets/player-numbers.js";
import type { Cohort } from "../../events/reads/cohort-counts.js";
import { InvalidArgumentError } from "../../errors.js";
import type { CohortFilter, ExperimentFilter } from "../../events/reads/query.js";
import { traitPairs } from "../rules/profile-match.js";
import type { TraitChange, TraitColumns } from "./trait-columns.js";

/** A trait key proves low-cardinality once this many players hold it with at most MAX_COHORT_VALUES values. */
const PROOF_HOLDERS = 100;
const MAX_COHORT_VALUES = 20;

/** The set of the players with a live profile. */
export const PROFILES = "profiles";
/** The set of a tag's players. */
export const tagSet = (tag: string): string => `t:${tag}`;
/** The set of the players exposed to an experiment's variant ("/" is in no name), and of those exposed on `day`. */
export const exposedSet = (experiment: string, variant: string, day?: string): string =>
  `x/${experiment}/${variant}${day === undefined ? "" : `/${day}`}`;

/** The experiments as the cohorts read them (config/exposure-cohorts.ts): an experiment's variants, null for none. */
export interface ExperimentVariants {
  variantsOf(projectId: string, experiment: string): Promise<string[] | null>;
}

/** A player's sets to join and leave (by name: PROFILES, tagSet(tag)), and traits to set or unset. */
export interface MemberChange {
  number: number;
  join: readonly string[];
  leave: readonly string[];
  traits: ReadonlyMap<string, string | null>;
}

/**
 * The players' cohorts as sets of player numbers (docs/architecture.md, "Cohorts as sets"): a set per tag and the set
 * of players with a profile, in `player_sets` chunks, and the traits' columns. A players round writes them before it
 * answers, so every read after it sees it; a filter is unions, intersections and differences of them.
 */
export class CohortSets {
  constructor(
    private readonly sets: ChunkStore<Bitmap>,
    private readonly traits: TraitColumns,
    private readonly numbers: PlayerNumbers,
    private readonly experiments: ExperimentVariants,
  ) {}

  /** Each player's sets joined and left, and traits written (idempotent: written again, it changes nothing). */
  async write(projectId: string, changes: readonly MemberChange[]): Promise<void> {
    const bySet = new Map<string, { join: number[]; leave: number[] }>();
    const moves = (name: string) => bySet.get(name) ?? bySet.set(name, { join: [], leave: [] }).get(name)!;
    for (const { number, join, leave } of changes) {
      for (const name of join) moves(name).join.push(number);
      for (const name of leave) moves(name).leave.push(number);
    }
    const writes = new Map<string, (bitmap: Bitmap) => boolean>();
    for (const [name, { join, leave }] of bySet) {
      const joining = byChunk(join);
      const leaving = byChunk(leave);
      for (const chunk of new Set([...joining.keys(), ...leaving.keys()])) {
        writes.set(this.chunkId(projectId, name, chunk), (bitmap) => {
          let changed = false;
          for (const number of joining.get(chunk) ?? []) changed = bitmap.tryAdd(number) || changed;
          for (const number of leaving.get(chunk) ?? []) changed = bitmap.delete(number) || changed;
          return changed;
        });
      }
    }
    const traits: TraitChange[] = changes.flatMap(({ number, traits }) =>
      [...traits].map(([key, value]) => ({ number, key, value })),
    );
    await Promise.all([this.sets.update(projectId, writes), this.traits.write(projectId, traits)]);
  }

  /** The members of each named set. */
  async members(projectId: string, names: readonly string[]): Promise<Bitmap[]> {
    const chunks = Math.ceil((await this.numbers.count(projectId)) / 2 ** CHUNK_BITS);
    const ids = names.flatMap((name) => Array.from({ length: chunks }, (_, c) => this.chunkId(projectId, name, c)));
    const read = await this.sets.read(ids);
    return names.map((_, i) => joined(read.slice(i * chunks, (i + 1) * chunks)));
  }

  /**
   * A filter's cohort: tags (any or all) and traits ANDed, less the players carrying a `tags_none` tag; with neither
   * tags nor traits, every player but those; with an experiment, only the players exposed to its variants.
   */
  async resolve(projectId: string, filter: CohortFilter): Promise<Cohort> {
    const cohort = await this.resolveProfiles(projectId, filter);
    if (!filter.experiment) return cohort;
    const { name, variants } = await this.experimentOf(projectId, filter.experiment);
    const exposed = union(
      await this.members(
        projectId,
        variants.map((variant) => exposedSet(name, variant)),
      ),
    );
    return {
      members: "members" in cohort ? Bitmap.and(cohort.members, exposed) : Bitmap.andNot(exposed, cohort.allBut),
    };
  }

  /**
   * The filter's experiment with its variants named (all when it names none); a 400 naming `experiment` or
   * `variants` for one the project does not have.
   */
  async experimentOf(projectId: string, filter: ExperimentFilter): Promise<ExperimentFilter> {
    const variants = await this.experiments.variantsOf(projectId, filter.name);
    if (!variants)
      throw new InvalidArgumentError(`experiment: the project has no experiment ${JSON.stringify(filter.name)}`);
    const unknown = filter.variants.find((variant) => !variants.includes(variant));
    if (unknown !== undefined) {
      throw new InvalidArgumentError(`variants: ${JSON.stringify(unknown)} is not a variant of ${filter.name}`);
    }
    return { name: filter.name, variants: filter.variants.length > 0 ? filter.variants : variants };
  }

  /** The tags and traits of a filter resolved. */
  private async resolveProfiles(projectId: string, filter: CohortFilter): Promise<Cohort> {
    const tagSets = await this.members(projectId, filter.tags.map(tagSet));
    const none =
      filter.tagsNone.length === 0 ? new Bitmap() : union(await this.members(projectId, filter.tagsNone.map(tagSet)));
    if (filter.tags.length === 0 && filter.traits.length === 0) return { allBut: none };
    const count = await this.numbers.count(projectId);
    const parts: Bitmap[] = [];
    if (tagSets.length > 0) parts.push(filter.tagsMatch === "all" ? intersection(tagSets) : union(tagSets));
    for (const [key, value] of traitPairs(filter.traits)) {
      parts.push(await this.traits.holders(projectId, key, JSON.stringify(value), count));
    }
    const members = intersection(parts);
    return { members: none.isEmpty ? members : Bitmap.andNot(members, none) };
  }

  /** Whether a trait key proved low-cardinality: PROOF_HOLDERS players hold it, with at most MAX_COHORT_VALUES values. */
  async lowCardinality(projectId: string, key: string): Promise<boolean> {
    const count = await this.numbers.count(projectId);
    return this.traits.lowCardinality(projectId, key, count, { holders: PROOF_HOLDERS, values: MAX_COHORT_VALUES });
  }

  private chunkId(projectId: string, name: string, chunk: number): string {
    return projectScopedId(projectId, `${name}/${chunk}`);
  }
}

export function union(sets: readonly Bitmap[]): Bitmap {
  return sets.length === 1 ? sets[0] : Bitmap.orMany(sets as Bitmap[]);
}

export function intersection(sets: readonly Bitmap[]): Bitmap {
  if (sets.length === 1) return sets[0];
  const sorted = [...sets].sort((a, b) => a.size - b.size);
  return sorted.slice(1).reduce((result, set) => Bitmap.and(result, set), sorted[0]);
}
