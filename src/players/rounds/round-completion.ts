import { setTimeout as delay } from "node:timers/promises";
import type { Logger } from "../../log.js";
import type { KeyedLock } from "../../db/keyed-lock.js";
import { completeMembership, type RoundMembership } from "../membership/membership-repair.js";
import { membersLock, profileLock, statsLock } from "./round-locks.js";
import type { PlayerStores } from "../storage/stores.js";

/** Waits between attempts: doubling from the first, capped at the last. */
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 10_000;

export interface RoundCompletionOptions {
  stores: PlayerStores;
  locks: KeyedLock;
  /** The lock of each profile, as the write path takes it. */
  log?: Logger;
}

/**
 * Completes, in this process, the membership of a round that failed after it
 * recorded its change: its membership and counts are re-derived from the
 * profiles as they are (see completeMembership), retried with backoff until
 * that succeeds, so a failure of the database never leaves search or
 * players_count behind the profiles until the next start (whose repair pass
 * also completes it). Then a failed erasure's `finish`, retried the same way.
 * Then `afterwards` runs: the round's history resync, which must not be
 * applied before its membership is written.
 */
export class RoundCompletion {
  constructor(private readonly options: RoundCompletionOptions) {}

  /** Starts completing `round` in the background; the promise settles once it is done (tests await it). */
  async start(round: RoundMembership, afterwards: () => Promise<void>, finish?: () => Promise<void>): Promise<void> {
    await this.untilDone(round.projectId, "tag membership of a players round", () => this.complete(round));
    if (finish) await this.untilDone(round.projectId, "an erasure's events and links", finish);
    await afterwards();
  }

  private async untilDone(projectId: string, what: string, task: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await task();
      } catch (error) {
        const wait = Math.min(FIRST_RETRY_MS * 2 ** (attempt - 1), MAX_RETRY_MS);
        this.options.log?.warn(
          { projectId, attempt, error: (error as Error)?.message, retryInMs: wait },
          `${what} not completed yet; retrying`,
        );
        await delay(wait, undefined, { ref: false });
      }
    }
  }

  /**
   * Holds the round's profile locks, then the locks of the membership
   * documents of its players and of the project's stats: the order and the
   * keys of a round's own membership write, so no round of this process
   * writes those players, documents or counts meanwhile.
   */
  private async complete(round: RoundMembership): Promise<void> {
    const { stores, locks } = this.options;
    const { projectId, identityKeys, tags } = round;
    if (tags.length === 0) return;
    const every = tags.map((tag) => ({ tag, added: identityKeys, removed: [] }));
    const docLocks = stores.membership.bucketIds(projectId, every).map(membersLock);
    await locks.run(
      identityKeys.map((key) => profileLock(projectId, key)),
      () => locks.run([...docLocks, statsLock(projectId)], () => completeMembership(stores, round)),
    );
  }
}
