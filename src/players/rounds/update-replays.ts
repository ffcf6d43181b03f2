import { createHash, randomUUID } from "node:crypto";
import type { Clock } from "../../clock.js";
import { AlreadyExistsError, ContentionError } from "../../errors.js";
import type { Logger } from "../../log.js";
import { REQUEST_ID_KEPT_MS } from "../rules/request-ids.js";
import type { NamedAnswer, UpdateAnswer } from "../rules/update-answer.js";
import type { UpdateRequestStore } from "../storage/update-request-store.js";

/**
 * A call's deadline on its claim: past it the id is free again, whatever became of the call (its process died, or it
 * failed and could not give the id back). Should the call still run, its profiles' request_ids keep a retry from
 * applying it twice.
 */
const RUNNING_MS = 30_000;
/** Attempts that ended and could not give their claim back or complete it, remembered so that a retry here takes it over at once. */
const ENDED_KEPT = 1_000;
/** How often the calls that carry a request_id remove expired ones, where the engine does not (FerretDB). */
const SWEEP_EVERY_MS = 60 * 60_000;

export interface UpdateReplaysOptions {
  store: UpdateRequestStore;
  clock: Clock;
  log?: Logger;
}

/** A hash of a call's entries as sent: a retry sends the same ones, in the same order. */
export const fingerprintOf = (entries: readonly object[]): string =>
  createHash("sha256").update(JSON.stringify(entries)).digest("base64url");

/**
 * Safe retries of players/update: a call with a `request_id` the project used
 * within REQUEST_ID_KEPT_MS answers the first call's answer and changes nothing
 * (so a retried `traits_increment` is not added twice). The same id with other
 * players is refused. A call that arrives while the first runs in this process
 * waits for it: its answer, or, if it failed, a run of its own; one running in
 * another process makes it answer aborted (retry), until that call's deadline at most.
 */
export class UpdateReplays {
  /** The call of each project/request_id running in this process, the only one of its id here. */
  private readonly running = new Map<string, { fingerprint: string; answer: Promise<UpdateAnswer> }>();
  /** Attempts of this process that ended with their claim still running (oldest first). */
  private readonly ended = new Set<string>();
  private lastSweep = 0;

  constructor(private readonly options: UpdateReplaysOptions) {}

  /** Forgets the project's kept answers that name any of `identityKeys` (an erasure's). */
  forget(projectId: string, identityKeys: readonly string[]): Promise<void> {
    return this.options.store.forgetAnswers(projectId, identityKeys);
  }

  /** `run`'s answer, run once per project and `requestId`; `fingerprint` names the call's players. */
  async once(
    projectId: string,
    requestId: string,
    fingerprint: string,
    run: () => Promise<NamedAnswer>,
  ): Promise<UpdateAnswer> {
    const key = `${projectId}/${requestId}`;
    for (let first = this.running.get(key); first; first = this.running.get(key)) {
      if (first.fingerprint !== fingerprint) throw otherPlayers();
      const answer = await first.answer.catch(() => undefined);
      if (answer) return answer;
    }
    const answer = this.claimAndRun(projectId, requestId, fingerprint, run);
    this.running.set(key, { fingerprint, answer });
    try {
      return await answer;
    } finally {
      this.running.delete(key);
    }
  }

  private async claimAndRun(
    projectId: string,
    requestId: string,
    fingerprint: string,
    run: () => Promise<NamedAnswer>,
  ): Promise<UpdateAnswer> {
    const { store, clock, log } = this.options;
    const now = clock.now();
    this.sweepIfDue(now);
    const owner = randomUUID();
    const runningUntil = new Date(now.getTime() + RUNNING_MS);
    const claim = await store.claim(projectId, requestId, fingerprint, {
      owner,
      now,
      runningUntil,
      endedOwners: this.ended,
    });
    if (claim.kind === "answered") return claim.answer;
    if (claim.kind === "other_players") throw otherPlayers();
    if (claim.kind === "running") throw new ContentionError("request_id: the call with it is still running; retry");
    let answer: NamedAnswer;
    try {
      answer = await run();
    } catch (error) {
      await store.release(projectId, requestId, owner).catch(() => this.remember(owner));
      throw error;
    }
    // The update is made: its answer stands even if keeping it fails (a retry then runs, and its profiles'
    // request_ids keep it from applying anything twice).
    await store
      .complete(projectId, requestId, answer, new Date(clock.now().getTime() + REQUEST_ID_KEPT_MS))
      .catch((err: unknown) => {
        this.remember(owner);
        log?.warn({ err, projectId }, "players/update: keeping the answer for request_id failed");
      });
    return answer.answer;
  }

  /** An attempt that ended without giving its claim back: a retry here may take the claim over at once. */
  private remember(owner: string): void {
    this.ended.add(owner);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.values().next().value!);
  }

  private sweepIfDue(now: Date): void {
    if (this.options.store.ttl || now.getTime() - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now.getTime();
    void this.options.store
      .deleteExpired(now)
      .catch((err: unknown) => this.options.log?.warn({ err }, "removing expired request_ids failed"));
  }
}

function otherPlayers(): AlreadyExistsError {
  return new AlreadyExistsError("request_id: an earlier call used it with other players");
}
