import { setTimeout as delay } from "node:timers/promises";
import type { FoldMove } from "../../events/queue/segment-store.js";
import type { Logger } from "../../log.js";
import type { KeyedLock } from "../../db/keyed-lock.js";
import type { IntentStore, RoundIntent } from "../storage/intent-store.js";
import { profileLock } from "./round-locks.js";

/** Waits between attempts: doubling from the first, capped at the last. */
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 10_000;

/** A round cut short after it recorded its intent: the sets to re-derive, the folds to carry out, then forget it. */
export interface UnfinishedRound {
  intent: RoundIntent;
  recorded: string;
  moves: readonly FoldMove[];
  /** An erasure's own steps after its commit point, when it is one. */
  finish?: () => Promise<void>;
}

/**
 * Completes, in this process, a round that failed after it recorded its intent: its players' sets re-derived from
 * their profiles as they are, its folds carried out (or an erasure's steps), each retried with backoff until it
 * succeeds, so a failure of the database never leaves reads behind the profiles until the next start (whose repair
 * completes the intents left too); then the intent is forgotten.
 */
export class RoundCompletion {
  private readonly completing = new Map<string, Set<Promise<void>>>();

  constructor(
    private readonly options: {
      log?: Logger;
      /** The write path's locks: a completion waits for the round it completes, and rounds of its players wait for it. */
      locks: KeyedLock;
      sync: (intent: RoundIntent) => Promise<void>;
      fold: (projectId: string, moves: readonly FoldMove[]) => Promise<void>;
    },
  ) {}

  /** Starts completing `round` in the background; its promise settles once it is done. */
  start(round: UnfinishedRound, intents: IntentStore): Promise<void> {
    const { projectId } = round.intent;
    const work = (async () => {
      const locks = round.intent.players.map(({ key }) => profileLock(projectId, key));
      await this.untilDone(projectId, "the sets of a players round", () =>
        this.options.locks.run(locks, () => this.options.sync(round.intent)),
      );
      if (round.finish) await this.untilDone(projectId, "an erasure's links and activity", round.finish);
      if (round.moves.length > 0) {
        await this.untilDone(projectId, "a fold's activity", () => this.options.fold(projectId, round.moves));
      }
      await this.untilDone(projectId, "a players round's intent", () => intents.settle(round.recorded));
    })();
    const running = this.completing.get(projectId) ?? new Set();
    this.completing.set(projectId, running.add(work));
    const done = () => void (running.delete(work) && running.size === 0 && this.completing.delete(projectId));
    work.then(done, done);
    return work;
  }

  /** The completions of a project's rounds running now. */
  of(projectId: string): Promise<void>[] {
    return [...(this.completing.get(projectId) ?? [])];
  }

  get running(): number {
    return [...this.completing.values()].reduce((count, running) => count + running.size, 0);
  }

  async settled(): Promise<void> {
    while (this.completing.size > 0) await Promise.all([...this.completing.values()].flatMap((set) => [...set]));
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
}
