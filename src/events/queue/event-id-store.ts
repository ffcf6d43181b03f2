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
  /** The event's time: the claim is swept with the event once out of the retention window. */
  t: Date;
}

export interface EventIdClaim {
  eventId: string;
  index: number;
  t: Date;
}

/** The event_ids collection: which event of a project first used an event_id. */
export class EventIdStore {
  private readonly ids;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.ids = db.collection<EventIdDoc>("event_ids");
  }

  /**
   * Claims each id for the event at (seq, index); returns the indexes whose
   * id an earlier event holds: they are repeats and count nothing. Claiming
   * again for the same event (a replayed segment) keeps it counted.
   */
  async claim(projectId: string, seq: number, claims: readonly EventIdClaim[]): Promise<Set<number>> {
    const failures = await this.engine.writeAll(
      this.ids,
      claims.map(({ eventId, index, t }) => ({
        insertOne: { document: { _id: projectScopedId(projectId, eventId), seq, index, t } },
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
      if (!holder || holder.seq !== seq || holder.index !== claim.index) repeats.add(claim.index);
    });
    return repeats;
  }

  /** A periodic sweep (it scans). */
  async deleteExpired(before: Date, limit: number): Promise<number> {
    return (await deleteStep(this.ids, { t: { $lt: before } }, limit)).length;
  }
}
