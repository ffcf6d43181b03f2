import { Long, type Db } from "mongodb";
import { batchedWrite } from "../db/batched-write.js";
import { projectScopedId } from "../db/ids.js";
import { absorb, type AbsorbOptions, type DocumentChange, type RollupDoc } from "./absorb.js";

/** The whole project: every player. */
export const EVERYONE = "*";
export const tagCohort = (tag: string): string => `t/${tag}`;
/** `entry`: traitIndexEntry(key, value). */
export const traitCohort = (entry: string): string => `r/${entry}`;

/** Per day, per name field: events and distinct players. */
export type CohortDays = Record<string, Record<string, { e: number; p: number }>>;

/**
 * A cohort document keeps a day's events and distinct players of a name in one
 * 64-bit integer, `events * PLAYERS_SPAN + players`: FerretDB's cost of reading
 * a document grows with its fields (docs/database.md), and one `$inc` still
 * moves both. It is written as a BSON Int64 so no engine adds it in 32 bits
 * (FerretDB 1.24 wraps an Int32 `$inc`), and read as a bigint. Exact while a
 * day, name and cohort has fewer than 2^31 players and 2^32 events.
 */
const PLAYERS_SPAN = 2n ** 31n;

/** The `$inc` that moves a stored count by `events` and `players` (either may be negative). */
export const countsChange = (events: number, players: number): Long =>
  Long.fromBigInt(BigInt(events) * PLAYERS_SPAN + BigInt(players));

/** A stored count is a real state (no negative part), so the remainder is the players. */
export function unpackCounts(packed: bigint): { e: number; p: number } {
  const p = packed % PLAYERS_SPAN;
  return { e: Number((packed - p) / PLAYERS_SPAN), p: Number(p) };
}

/** The packing before counts were 64-bit (events * 2^26 + players, as an Int32 or a double): read until rebuilt. */
const LEGACY_PLAYERS_SPAN = 2 ** 26;

function unpackLegacy(packed: number): { e: number; p: number } {
  const p = packed % LEGACY_PLAYERS_SPAN;
  return { e: (packed - p) / LEGACY_PLAYERS_SPAN, p };
}

interface CohortMonthDoc extends RollupDoc {
  _id: string;
  project_id: string;
  cohort: string;
  month: string;
  /** Per day, per name field: events * PLAYERS_SPAN + players, an Int64. */
  counts?: Record<string, Record<string, bigint>>;
  /** The same in the legacy packing, until the rebuild (cohort-rebuild.ts) replaces it. */
  days?: Record<string, Record<string, number>>;
  hw: number;
}

/** One cohort's month of counts, summed from the players' histories. */
export interface CohortTotals {
  projectId: string;
  cohort: string;
  month: string;
  days: CohortDays;
}

/** Its `_id` is no cohort month's (those are project-scoped: `<project>/...`). */
const LAYOUT_ID = "layout";
/** 2: 64-bit counts under `counts`. Absent: a database from before, packed in 32 bits under `days`. */
const LAYOUT_VERSION = 2;

interface LayoutDoc {
  _id: string;
  version: number;
}

const packDays = (days: CohortDays) => mapValues(days, (names) => mapValues(names, ({ e, p }) => countsChange(e, p)));

export const cohortMonthId = (projectId: string, cohort: string, month: string): string =>
  projectScopedId(projectId, `${cohort}/${month}`);

/**
 * The event_cohort_rollups collection: per project, cohort (everyone, a tag,
 * a materialised trait value) and month, the daily events and distinct players
 * per event name. A chart reads one document per cohort and month.
 */
export class CohortRollupStore {
  private readonly rollups;
  /** The same collection, as absorb() writes it. */
  private readonly writes;
  /** The same collection: the one document recording the counts' layout. */
  private readonly layout;

  constructor(db: Db) {
    this.rollups = db.collection<CohortMonthDoc>("event_cohort_rollups");
    this.writes = db.collection<RollupDoc>("event_cohort_rollups");
    this.layout = db.collection<LayoutDoc>("event_cohort_rollups");
  }

  /** The days of each (cohort, month), read side by side by `_id`; missing documents read as empty. */
  async read(projectId: string, cohort: string, months: readonly string[]): Promise<CohortDays> {
    const docs = await Promise.all(
      months.map((month) =>
        this.rollups.findOne(
          { _id: cohortMonthId(projectId, cohort, month) },
          { projection: { counts: 1, days: 1 }, useBigInt64: true },
        ),
      ),
    );
    const counts: CohortDays = {};
    for (const doc of docs) {
      if (doc?.counts) {
        for (const [day, names] of Object.entries(doc.counts)) counts[day] = mapValues(names, unpackCounts);
      } else {
        for (const [day, names] of Object.entries(doc?.days ?? {})) counts[day] = mapValues(names, unpackLegacy);
      }
    }
    return counts;
  }

  /** Cohort counts are always written under `counts` (see PLAYERS_SPAN). */
  absorb(seq: number, changes: readonly DocumentChange[], options: AbsorbOptions): Promise<void> {
    return absorb(this.writes, seq, changes, options);
  }

  /** Whether the counts are all in the 64-bit layout (false on a database from before it). */
  async isCurrent(): Promise<boolean> {
    return (await this.layout.findOne({ _id: LAYOUT_ID }))?.version === LAYOUT_VERSION;
  }

  /**
   * Replaces the counts of `totals`' documents with theirs, drops every
   * legacy packed count left, then records the layout (cohort-rebuild.ts).
   */
  async replaceAll(totals: readonly CohortTotals[], hw: number): Promise<void> {
    const operations = totals.map(({ projectId, cohort, month, days }) => ({
      updateOne: {
        filter: { _id: cohortMonthId(projectId, cohort, month) },
        update: {
          $set: { project_id: projectId, cohort, month, hw, counts: packDays(days) },
          $unset: { days: "" },
        },
        upsert: true,
      },
    }));
    const failures = await batchedWrite(this.writes, operations);
    if (failures.length > 0) throw new Error(`cohort rebuild write failed with code ${failures[0].code}`);
    // Documents no player history counts in any more: a scan, once.
    await this.rollups.updateMany({ days: { $exists: true } }, { $unset: { days: "" } });
    await this.layout.updateOne({ _id: LAYOUT_ID }, { $set: { version: LAYOUT_VERSION } }, { upsert: true });
  }

  /** Months wholly before `beforeMonth`. A periodic sweep: it scans. */
  async deleteBefore(beforeMonth: string): Promise<number> {
    return (await this.rollups.deleteMany({ month: { $lt: beforeMonth } })).deletedCount;
  }
}

const mapValues = <T, U>(record: Record<string, T>, f: (value: T) => U): Record<string, U> =>
  Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(value)]));
