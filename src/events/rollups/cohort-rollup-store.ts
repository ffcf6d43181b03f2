import { deleteStep } from "../delete-step.js";
import { Long, type Db } from "mongodb";
import type { Engine } from "../../db/engine.js";
import { projectScopedId } from "../../db/ids.js";
import { absorb, type AbsorbOptions, type DocumentChange, type RollupDoc } from "../apply/absorb.js";
import type { ProjectNames } from "./event-name-store.js";
import { nameOfField } from "../rollup-keys.js";
import { addToSlot } from "../reads/sums.js";

/** The whole project: every player. */
export const EVERYONE = "*";
export const tagCohort = (tag: string): string => `t/${tag}`;
/** `entry`: traitIndexEntry(key, value). */
export const traitCohort = (entry: string): string => `r/${entry}`;

/** Per day, per name field: events, distinct players and, when a read asks, sums in millionths by id (sums.ts). */
export type CohortDays = Record<string, Record<string, CountsSlot>>;

export interface CountsSlot {
  e: number;
  p: number;
  s?: Record<string, number>;
}

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

interface CohortMonthDoc extends RollupDoc {
  _id: string;
  project_id: string;
  cohort: string;
  month: string;
  /** Per day, per name field: events * PLAYERS_SPAN + players, an Int64. */
  counts?: Record<string, Record<string, bigint>>;
  /** Per day, per name field, per summed property id: the total in millionths, an Int64 (sums.ts). */
  sums?: Record<string, Record<string, Record<string, bigint>>>;
  hw: number;
}

/**
 * A cohort month is kept in documents of this many names each (the names in
 * the order the project first used them, ProjectNames): a document holds at
 * most 31 × 16 counts however many names the project uses, and FerretDB's cost
 * of a read grows with the fields (at 1,000 names in one document, 1.36 s).
 */
const NAMES_PER_DOCUMENT = 16;

/** The document a name's counts are in; a name not registered (none should be) reads and writes in the first. */
export const nameBlockOf = (names: ProjectNames, name: string): number =>
  Math.floor((names.placeOf(name) ?? 0) / NAMES_PER_DOCUMENT);

/** The first block's id names no block. */
export const cohortMonthId = (projectId: string, cohort: string, month: string, block: number): string =>
  projectScopedId(projectId, block === 0 ? `${cohort}/${month}` : `${cohort}/${month}/${block}`);

/**
 * The event_cohort_rollups collection: per project, cohort (everyone, a tag,
 * a materialised trait value) and month, the daily events and distinct players
 * per event name. A chart reads one document per cohort and month.
 */
export class CohortRollupStore {
  private readonly rollups;
  /** The same collection, as absorb() writes it. */
  private readonly writes;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.rollups = db.collection<CohortMonthDoc>("event_cohort_rollups");
    this.writes = db.collection<RollupDoc>("event_cohort_rollups");
  }

  /**
   * The days of each (cohort, month) over the blocks of `wanted` names (every
   * block of `names` when absent), read side by side by `_id`; missing
   * documents read as empty. A block counts only its own names (one not
   * registered when it was written is in the first). The sums of `sumIds`, when given.
   */
  async read(
    projectId: string,
    cohort: string,
    months: readonly string[],
    names: ProjectNames,
    wanted?: readonly string[],
    sumIds: ReadonlySet<string> = new Set(),
  ): Promise<CohortDays> {
    const blocks = wanted
      ? [...new Set(wanted.map((name) => nameBlockOf(names, name)))]
      : Array.from({ length: Math.max(1, Math.ceil(names.size / NAMES_PER_DOCUMENT)) }, (_, block) => block);
    const documents = months.flatMap((month) => blocks.map((block) => ({ month, block })));
    const docs = await Promise.all(
      documents.map(({ month, block }) =>
        this.rollups.findOne(
          { _id: cohortMonthId(projectId, cohort, month, block) },
          { projection: { counts: 1, ...(sumIds.size > 0 && { sums: 1 }) }, useBigInt64: true },
        ),
      ),
    );
    const counts: CohortDays = {};
    docs.forEach((doc, i) => {
      const inBlock = (field: string) => nameBlockOf(names, nameOfField(field)) === documents[i].block;
      for (const [day, fields] of Object.entries(doc?.counts ?? {})) {
        for (const [field, stored] of Object.entries(fields))
          if (inBlock(field)) (counts[day] ??= {})[field] = unpackCounts(stored);
      }
      for (const [day, fields] of Object.entries(doc?.sums ?? {})) {
        for (const [field, sums] of Object.entries(fields)) {
          if (!inBlock(field)) continue;
          const slot = ((counts[day] ??= {})[field] ??= { e: 0, p: 0 });
          addToSlot(slot, Object.fromEntries(Object.entries(sums).map(([id, total]) => [id, Number(total)])), sumIds);
        }
      }
    });
    return counts;
  }

  /** Cohort counts are always written under `counts` (see PLAYERS_SPAN). */
  absorb(seq: number, changes: readonly DocumentChange[], options: AbsorbOptions): Promise<void> {
    return absorb(this.engine, this.writes, seq, changes, options);
  }

  /** Months wholly before `beforeMonth`. A periodic sweep: it scans. */
  async deleteBefore(beforeMonth: string, limit: number): Promise<number> {
    return (await deleteStep(this.rollups, { month: { $lt: beforeMonth } }, limit)).length;
  }
}
