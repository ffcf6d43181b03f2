import { deleteStep } from "../delete-step.js";
import type { Db } from "mongodb";
import type { Engine } from "../../db/engine.js";
import { isDuplicateKeyCode } from "../../db/errors.js";
import { projectScopedId } from "../../db/ids.js";

interface EventIdDoc {
  _id: string;
  /** The segment and position of the event that claimed the id: a replay of that same event still counts. */
  seq: number;
  index: number;
  /** When it was claimed: the id counts once for EVENT_ID_WINDOW_DAYS from then (a TTL, or the sweep, removes it). */
  at: Date;
}

export interface EventIdClaim {
  eventId: string;
  index: number;
}

/**
 * The event_ids collection: which event of a project first used an event_id, for EVENT_ID_WINDOW_DAYS (a repeat
 * within it counts nothing; after it, the id is new again).
 */
export class EventIdStore {
  private readonly ids;

  constructor(
    db: Db,
    private readonly engine: Engine,
    private readonly windowDays: number,
  ) {
    this.ids = db.collection<EventIdDoc>("event_ids");
  }

  /** Where the engine has TTL indexes, one removes claims past the window (elsewhere the worker's sweep does). */
  async createIndexes(): Promise<void> {
    if (this.engine.ttlIndexes) {
      await this.ids.createIndex({ at: 1 }, { expireAfterSeconds: this.windowDays * 86_400 });
    }
  }

  /**
   * Claims each id for the event at (seq, index); returns the indexes whose
   * id an earlier event holds: they are repeats and count nothing. Claiming
   * again for the same event (a replayed segment) keeps it counted.
   */
  async claim(
    projectId: string,
    { seq, earlier = [] }: { seq: number; earlier?: readonly number[] },
    claims: readonly EventIdClaim[],
    now: Date,
  ): Promise<Set<number>> {
    const failures = await this.engine.writeAll(
      this.ids,
      claims.map(({ eventId, index }) => ({
        insertOne: { document: { _id: projectScopedId(projectId, eventId), seq, index, at: now } },
      })),
    );
    const repeats = new Set<number>();
    const taken = failures.map((failure) => {
      if (!isDuplicateKeyCode(failure.code)) throw new Error(`event id claim failed with code ${failure.code}`);
      return claims[failure.index];
    });
    const holders = await this.engine.readByIds(
      this.ids,
      taken.map((claim) => projectScopedId(projectId, claim.eventId)),
    );
    taken.forEach((claim, i) => {
      const holder = holders[i];
      // A replayed segment's own claim counts, and so does the claims of the parked segments a retry queued again.
      const own = holder && (holder.seq === seq || earlier.includes(holder.seq)) && holder.index === claim.index;
      if (!own) repeats.add(claim.index);
    });
    return repeats;
  }

  /** A step of the sweep of the claims past the window (it scans: the embedded engine has no TTL index). */
  async deleteExpired(now: Date, limit: number): Promise<number> {
    const before = new Date(now.getTime() - this.windowDays * 86_400_000);
    return (await deleteStep(this.ids, { at: { $lt: before } }, limit)).length;
  }
}
