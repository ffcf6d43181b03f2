import { sideBySide } from "../../db/gate.js";
import type { TraitValue } from "../../players/rules/normalise.js";
import { traitIndexEntry } from "../../players/rules/normalise.js";
import type { PlayerCohorts } from "../player-directory.js";
import type { QueueStateStore } from "../queue/queue.js";
import type { TraitKeyState, EventTraitKeyStore } from "../rollups/event-trait-key-store.js";

/** A key whose values, among its first PROOF_HOLDERS players, number at most this many is low-cardinality. */
export const MAX_COHORT_VALUES = 20;
/** Players a key must be seen on before its cardinality counts as proved. */
export const PROOF_HOLDERS = 100;

/** The trait key of a traitIndexEntry(). */
export const traitKeyOf = (entry: string): string => (JSON.parse(entry) as [string, TraitValue])[0];

/** What `materialise` found: whether the key's cohorts answer already, or whether a backfill must be queued. */
export interface MaterialiseOutcome {
  ready: boolean;
  backfill: boolean;
}

/** A trait key's cohorts: asked for (they stay on), and read by filters already. */
export interface TraitMaterialisation {
  materialised: boolean;
  ready: boolean;
}

/**
 * When a trait key gets materialised cohorts, and when they can be read.
 * A key turns on when enabled, or when the apply worker has seen it on
 * PROOF_HOLDERS players with at most MAX_COHORT_VALUES values. Turning on
 * queues a backfill segment: applying it adds the key to the cohorts the
 * worker places players in, and queues resyncs of the key's holders; once
 * those are applied the key's cohorts are read (until then, the exact path).
 */
export class TraitCohorts {
  /** What the worker has seen of each key, by project and key (the worker alone writes the evidence). */
  private readonly seen = new Map<string, TraitKeyState>();

  constructor(private readonly options: { store: EventTraitKeyStore; queue: QueueStateStore }) {}

  /**
   * The enabling call: answers whether the key's cohorts answer now, and
   * whether its backfill must be queued (then markRequested, once it is: a
   * crash in between only queues a second, harmless backfill later).
   */
  async materialise(projectId: string, key: string): Promise<MaterialiseOutcome> {
    const state = await this.options.store.find(projectId, key);
    if (!state?.requested) return { ready: false, backfill: true };
    return { ready: state.readySeq !== null && (await this.applied(state.readySeq)), backfill: false };
  }

  /** The key's backfill is queued (by the enabling call, or by the worker for a key that proved itself). */
  async markRequested(projectId: string, key: string): Promise<void> {
    await this.options.store.request(projectId, key);
    const seen = this.seen.get(`${projectId}/${key}`);
    if (seen) seen.requested = true;
  }

  /** Whether a filter on the key can read its materialised cohorts. */
  async isReady(projectId: string, key: string): Promise<boolean> {
    const state = await this.options.store.find(projectId, key);
    return state?.readySeq != null && (await this.applied(state.readySeq));
  }

  /** Per key, in order: whether its cohorts were asked for, and whether filters read them (point reads by `_id`). */
  async materialisation(projectId: string, keys: readonly string[]): Promise<TraitMaterialisation[]> {
    const [states, queue] = await Promise.all([
      sideBySide(keys, (key) => this.options.store.find(projectId, key)),
      this.options.queue.read(),
    ]);
    return states.map((state) => ({
      materialised: state?.requested ?? false,
      ready: state?.readySeq != null && queue.applied >= state.readySeq,
    }));
  }

  /**
   * The apply worker's look at the profiles it read: the evidence of each key
   * not yet decided. Answers the keys that just proved low-cardinality.
   */
  async observe(
    projectId: string,
    profiles: ReadonlyMap<string, PlayerCohorts>,
    materialised: ReadonlySet<string>,
  ): Promise<string[]> {
    const changed = new Map<string, TraitKeyState>();
    for (const [identityKey, { traits }] of profiles) {
      for (const [key, value] of traits) {
        if (materialised.has(key)) continue;
        const state = changed.get(key) ?? (await this.evidence(projectId, key));
        if (state.requested || state.values.length > MAX_COHORT_VALUES) continue;
        const entry = traitIndexEntry(key, value);
        const newValue = !state.values.includes(entry);
        const newHolder = state.holders.length < PROOF_HOLDERS && !state.holders.includes(identityKey);
        // A key proved but not yet marked requested (its backfill's enqueue failed) proves again.
        if (!newValue && !newHolder && state.holders.length < PROOF_HOLDERS) continue;
        if (newValue) state.values.push(entry);
        // Past MAX_COHORT_VALUES the key is decided: high-cardinality; its holders no longer matter.
        if (state.values.length > MAX_COHORT_VALUES) state.holders = [];
        else if (newHolder) state.holders.push(identityKey);
        changed.set(key, state);
      }
    }
    const proved: string[] = [];
    for (const [key, state] of changed) {
      if (state.holders.length >= PROOF_HOLDERS) proved.push(key);
      else await this.options.store.observed(projectId, key, state);
    }
    return proved;
  }

  private async evidence(projectId: string, key: string): Promise<TraitKeyState> {
    const id = `${projectId}/${key}`;
    let state = this.seen.get(id);
    if (!state) {
      state = (await this.options.store.find(projectId, key)) ?? {
        values: [],
        holders: [],
        requested: false,
        readySeq: null,
      };
      this.seen.set(id, state);
    }
    return state;
  }

  private async applied(seq: number): Promise<boolean> {
    return (await this.options.queue.read()).applied >= seq;
  }
}
