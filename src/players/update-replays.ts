import type { Clock } from "../clock.js";
import { KeyedLock } from "../db/keyed-lock.js";
import { AlreadyExistsError, ContentionError } from "../errors.js";
import type { Logger } from "../log.js";
import type { UpdateRequestStore } from "./update-request-store.js";

/** How long a call's answer is kept for its retries (and its request_id on the profiles it wrote, decide.ts). */
export const REQUEST_ID_KEPT_MS = 24 * 60 * 60_000;
/** A claim whose call never finished (its process died) frees the id after this. */
const RUNNING_MS = 2 * 60_000;
/** How often the calls that carry a request_id remove expired ones, where the engine does not (FerretDB). */
const SWEEP_EVERY_MS = 60 * 60_000;

export interface UpdateReplaysOptions {
  store: UpdateRequestStore;
  clock: Clock;
  log?: Logger;
}

/**
 * Safe retries of players/update: a call with a `request_id` the project used
 * within REQUEST_ID_KEPT_MS answers the first call's answer and changes nothing
 * (so a retried `traits_increment` is not added twice). The same id with other
 * players is refused, and so is a retry while the first call still runs.
 */
export class UpdateReplays {
  private readonly locks = new KeyedLock();
  private lastSweep = 0;

  constructor(private readonly options: UpdateReplaysOptions) {}

  /** `run`'s answer, run once per project and `requestId`; `fingerprint` names the call's players. */
  async once(
    projectId: string,
    requestId: string,
    fingerprint: string,
    run: () => Promise<Uint8Array>,
  ): Promise<Uint8Array> {
    const { store, clock, log } = this.options;
    const now = clock.now();
    this.sweepIfDue(now);
    const claim = await this.locks.run([`${projectId}/${requestId}`], () =>
      store.claim(projectId, requestId, fingerprint, now, new Date(now.getTime() + RUNNING_MS)),
    );
    if (claim.kind === "answered") return claim.answer;
    if (claim.kind === "other_players") {
      throw new AlreadyExistsError("request_id: an earlier call used it with other players");
    }
    if (claim.kind === "running") throw new ContentionError("request_id: the call with it is still running; retry");
    let answer: Uint8Array;
    try {
      answer = await run();
    } catch (error) {
      await store.release(projectId, requestId).catch(() => undefined);
      throw error;
    }
    // The update is made: its answer stands even if keeping it fails (a retry then waits for the claim to expire).
    await store
      .complete(projectId, requestId, answer, new Date(clock.now().getTime() + REQUEST_ID_KEPT_MS))
      .catch((err: unknown) =>
        log?.warn({ err, projectId }, "players/update: keeping the answer for request_id failed"),
      );
    return answer;
  }

  private sweepIfDue(now: Date): void {
    if (this.options.store.ttl || now.getTime() - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now.getTime();
    void this.options.store
      .deleteExpired(now)
      .catch((err: unknown) => this.options.log?.warn({ err }, "removing expired request_ids failed"));
  }
}
