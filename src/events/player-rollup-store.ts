import type { Db } from "mongodb";
import { projectIdRange, projectScopedId } from "../db/ids.js";
import type { Engine } from "../db/engine.js";
import type { CohortDays } from "./cohort-rollup-store.js";
import { HistoryMemory, type FoundHistory } from "./history-memory.js";

/** Histories read from the database at once when summed, so memory stays bounded. */
const READ_SLICE = 1000;
import { absorb, type AbsorbOptions, type DocumentChange, type RollupDoc } from "./absorb.js";

/** Per day, events per name field (see names.ts). */
export type DayCounts = Record<string, Record<string, number>>;

/** One player's history of events, and the cohorts it is counted in. */
export interface PlayerRollup {
  identityKey: string;
  days: DayCounts;
  /** Cohort ids ("t/<tag>", "r/<trait>") the history is counted in now. */
  cohorts: string[];
  /** Set once a device's history moved to a player. */
  foldedInto: string | null;
  /** The last queue segment this history absorbed. */
  hw: number;
}

interface PlayerRollupDoc extends RollupDoc {
  _id: string;
  project_id: string;
  identity_key: string;
  days?: DayCounts;
  cohorts?: string[];
  /** The player's trait keys as of the last segment that touched it. */
  trait_keys?: string[];
  folded_into?: string | null;
  hw: number;
}

export const playerRollupId = (projectId: string, identityKey: string): string =>
  projectScopedId(projectId, identityKey);

/**
 * The event_player_rollups collection: per player, daily event counts by name.
 * Where the instance owns its database, histories are kept in memory too
 * (HistoryMemory); many are read by the engine's way (src/db/engine.ts).
 */
export class PlayerRollupStore {
  private readonly rollups;
  /** The same collection, as absorb() writes it. */
  private readonly writes;
  private readonly memory: HistoryMemory | null;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.rollups = db.collection<PlayerRollupDoc>("event_player_rollups");
    this.writes = db.collection<RollupDoc>("event_player_rollups");
    this.memory = engine.ownerMemory && new HistoryMemory(engine.ownerMemory);
  }

  /**
   * The histories of `identityKeys` that have one: from memory, the rest read
   * by `_id`. With `fillMemory` (the apply worker, the only writer) the owner's
   * memory is first filled with the whole project by one scan, when it fits.
   */
  async read(
    projectId: string,
    identityKeys: readonly string[],
    { fillMemory = false } = {},
  ): Promise<Map<string, PlayerRollup>> {
    if (this.memory && fillMemory) await this.memory.fill(projectId, () => this.scan(projectId));
    const found = new Map<string, PlayerRollup>();
    const missing: string[] = [];
    for (const key of identityKeys) {
      const known = this.memory?.get(projectId, playerRollupId(projectId, key));
      if (known === undefined) missing.push(key);
      else if (known) found.set(key, known);
    }
    const epoch = this.memory?.epoch ?? 0;
    const docs = await this.engine.readByIds(
      this.rollups,
      missing.map((key) => playerRollupId(projectId, key)),
    );
    docs.forEach((doc, i) => {
      const rollup = doc && toRollup(doc);
      this.memory?.read(epoch, projectId, missing[i], doc && rollup && { id: doc._id, rollup, hw: doc.hw });
      if (rollup) found.set(rollup.identityKey, rollup);
    });
    return found;
  }

  /** Every history of the project: a scan of the collection. */
  private async scan(projectId: string): Promise<FoundHistory[]> {
    const docs = await this.rollups.find({ _id: projectIdRange(projectId) }).toArray();
    return docs.map((doc) => ({ id: doc._id, rollup: toRollup(doc), hw: doc.hw }));
  }

  /**
   * Adds the histories of `identityKeys` on `days` to `totals`: events, and
   * one player per day and name with any. From memory where it holds them;
   * the rest read in slices of READ_SLICE, so memory stays bounded.
   */
  async sum(projectId: string, identityKeys: readonly string[], days: ReadonlySet<string>, totals: CohortDays) {
    const missing = this.memory ? this.memory.sum(projectId, identityKeys, days, totals) : identityKeys;
    for (let from = 0; from < missing.length; from += READ_SLICE) {
      const rollups = await this.read(projectId, missing.slice(from, from + READ_SLICE));
      for (const rollup of rollups.values()) {
        for (const [day, names] of Object.entries(rollup.days)) {
          if (!days.has(day)) continue;
          for (const [field, events] of Object.entries(names)) {
            if (events <= 0) continue;
            const total = ((totals[day] ??= {})[field] ??= { e: 0, p: 0 });
            total.e += events;
            total.p += 1;
          }
        }
      }
    }
  }

  async absorb(seq: number, changes: readonly DocumentChange[], options: AbsorbOptions): Promise<void> {
    try {
      await absorb(this.engine, this.writes, seq, changes, options);
    } catch (error) {
      this.memory?.forget(changes);
      throw error;
    }
    this.memory?.absorbed(seq, changes);
  }

  /**
   * The players with a history who carried trait `key` when last touched.
   * Read once when a key turns on, in queue order: it scans.
   */
  async holdersOf(projectId: string, key: string): Promise<string[]> {
    const docs = await this.rollups
      .find({ project_id: projectId, trait_keys: key, folded_into: null }, { projection: { identity_key: 1 } })
      .toArray();
    return docs.map((doc) => doc.identity_key);
  }

  /** Every player history of every project, one at a time. A scan, once (cohort-rebuild.ts). */
  async forEachHistory(visit: (projectId: string, rollup: PlayerRollup) => void): Promise<void> {
    const histories = this.rollups.find(
      {},
      { projection: { project_id: 1, identity_key: 1, days: 1, cohorts: 1, hw: 1 } },
    );
    for await (const doc of histories) {
      if (doc.folded_into) continue;
      visit(doc.project_id, {
        identityKey: doc.identity_key,
        days: doc.days ?? {},
        cohorts: doc.cohorts ?? [],
        foldedInto: null,
        hw: doc.hw ?? 0,
      });
    }
  }

  /** Players with no event inside the window (`lastDay` before it) go whole. A periodic sweep: it scans. */
  async deleteIdle(beforeDay: string): Promise<number> {
    try {
      return (await this.rollups.deleteMany({ last_day: { $lt: beforeDay } })).deletedCount;
    } finally {
      this.memory?.forgetAll();
    }
  }
}

function toRollup(doc: PlayerRollupDoc): PlayerRollup {
  return {
    identityKey: doc.identity_key,
    days: doc.days ?? {},
    cohorts: doc.cohorts ?? [],
    foldedInto: doc.folded_into ?? null,
    hw: doc.hw,
  };
}
