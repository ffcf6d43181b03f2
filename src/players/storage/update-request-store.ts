import type { Engine } from "../../db/engine.js";
import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";
import { projectScopedId } from "../../db/ids.js";
import type { NamedAnswer, UpdateAnswer } from "../rules/update-answer.js";

/** A players/update call's `request_id`, kept while its answer may be asked for again. */
interface UpdateRequestDoc {
  _id: string;
  project_id: string;
  /** A hash of the call's players: a retry sends the same ones. */
  fingerprint: string;
  state: "running" | "done";
  /** Names the attempt that claimed it. */
  owner: string;
  /** The call's answer, as the players domain holds it; set when done. */
  answer?: UpdateAnswer;
  /** Every identity key the answer names (NamedAnswer); set when done. */
  names?: readonly string[];
  /** Past this the id is free again: a day after the answer, or the running call's deadline. */
  expires_at: Date;
}

const CLAIM_ATTEMPTS = 5;

/** What a call finds under its `request_id`. */
export type UpdateClaim =
  { kind: "mine" } | { kind: "answered"; answer: UpdateAnswer } | { kind: "running" } | { kind: "other_players" };

/** The player_update_requests collection: `_id` `<project>/<request_id>`. */
export class UpdateRequestStore {
  private readonly requests;
  /** A TTL index removes expired ids where the engine has them; elsewhere `deleteExpired` does. */
  readonly ttl: boolean;
  /** The only writer: a claim running that no call of this process holds was left by a call that ended. */
  private readonly soleWriter: boolean;

  constructor(db: Db, engine: Engine) {
    this.requests = db.collection<UpdateRequestDoc>("player_update_requests");
    this.ttl = engine.ttlIndexes;
    this.soleWriter = engine.soleWriter;
  }

  /**
   * Deletes the project's kept answers that name any of `identityKeys` (an erasure): by an index on MongoDB, a scan
   * of the last day's ids on the embedded engine.
   */
  async forgetAnswers(projectId: string, identityKeys: readonly string[]): Promise<void> {
    await this.requests.deleteMany({ project_id: projectId, state: "done", names: { $in: [...identityKeys] } });
  }

  async createIndexes(queryIndexes: boolean): Promise<void> {
    if (this.ttl) await this.requests.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
    if (queryIndexes) await this.requests.createIndex({ project_id: 1, names: 1 });
  }

  /**
   * Claims `requestId` for the attempt `owner`, a call that runs until
   * `runningUntil`, or says who has it. A claim is taken over once expired, or
   * while running when its call ended: one of `endedOwners` (failed, and could
   * not give it back), or any on the sole writer. Callers hold no other call
   * of the id in the process (FerretDB loses concurrent updates of one
   * document); between processes the insert's `_id` and the update's filter decide.
   */
  async claim(
    projectId: string,
    requestId: string,
    fingerprint: string,
    attempt: { owner: string; now: Date; runningUntil: Date; endedOwners: ReadonlySet<string> },
  ): Promise<UpdateClaim> {
    const { owner, now, runningUntil, endedOwners } = attempt;
    const _id = projectScopedId(projectId, requestId);
    const running = {
      project_id: projectId,
      fingerprint,
      state: "running" as const,
      owner,
      expires_at: runningUntil,
    };
    // Each pass meets a state another call changed since the last; a few passes settle it.
    for (let pass = 0; pass < CLAIM_ATTEMPTS; pass++) {
      try {
        await this.requests.insertOne({ _id, ...running });
        return { kind: "mine" };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const doc = await this.requests.findOne({ _id });
      if (!doc) continue;
      if (doc.expires_at <= now || (doc.state === "running" && this.ended(doc.owner, endedOwners))) {
        const taken = await this.requests.updateOne(
          { _id, expires_at: doc.expires_at },
          { $set: running, $unset: { answer: "", names: "" } },
        );
        if (taken.matchedCount === 1) return { kind: "mine" };
        continue;
      }
      if (doc.fingerprint !== fingerprint) return { kind: "other_players" };
      if (doc.state === "running" || !doc.answer) return { kind: "running" };
      return { kind: "answered", answer: doc.answer };
    }
    return { kind: "running" };
  }

  private ended(owner: string, endedOwners: ReadonlySet<string>): boolean {
    return this.soleWriter || endedOwners.has(owner);
  }

  /** Keeps the call's answer, and the identity keys it names, until `keepUntil`. */
  async complete(projectId: string, requestId: string, { answer, names }: NamedAnswer, keepUntil: Date): Promise<void> {
    await this.requests.updateOne(
      { _id: projectScopedId(projectId, requestId) },
      { $set: { state: "done", answer, names, expires_at: keepUntil } },
    );
  }

  /** Frees the id the attempt `owner` claimed and failed, so that its retry runs. */
  async release(projectId: string, requestId: string, owner: string): Promise<void> {
    await this.requests.deleteOne({ _id: projectScopedId(projectId, requestId), state: "running", owner });
  }

  /** Removes the ids expired at `now` (a scan on FerretDB, which has no TTL index). */
  async deleteExpired(now: Date): Promise<void> {
    await this.requests.deleteMany({ expires_at: { $lte: now } });
  }
}
