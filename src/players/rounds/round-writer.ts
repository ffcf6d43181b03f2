import { setTimeout as delay } from "node:timers/promises";
import type { KeyedLock } from "../../db/keyed-lock.js";
import { UnavailableError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { PlayerActivityChanges } from "../../events/player-directory.js";
import type { PlayerNumbers } from "../../sets/player-numbers.js";
import type { CohortSets } from "../cohorts/cohort-sets.js";
import type { RoundPlan } from "../rules/decide.js";
import { foldMoves, memberChange, membershipOf, numberOf } from "../rules/cohort-moves.js";
import type { ProfileSlot, SlotContent } from "../rules/profile.js";
import type { TagSeen } from "../cohorts/tag-seen.js";
import type { PlayerStores } from "../storage/stores.js";
import { RoundCompletion } from "./round-completion.js";
import { intentOf, syncFromProfiles } from "./cohort-sync.js";
import { finishErasure, finishIfMarked, type ErasedExposures } from "./erasure-finish.js";
import type { Erasure } from "../rules/erasure.js";
import type { RoundIntent } from "../storage/intent-store.js";
import type { Step } from "../../steps.js";

export interface RoundWriterOptions {
  stores: PlayerStores;
  cohorts: CohortSets;
  numbers: PlayerNumbers;
  seen: TagSeen;
  /** The events side: a fold's activity moves to the player before the round answers. */
  activity?: PlayerActivityChanges;
  /** The experiments' side: an erasure takes the players out of the variants' sets. */
  exposures?: ErasedExposures;
  locks: KeyedLock;
  log?: Logger;
}

export interface PlannedWrite {
  identityKey: string;
  read: ProfileSlot;
  next: SlotContent;
}

/** A round whose profile writes are acknowledged: what is left to write after its commit point. */
export interface CommittedRound {
  projectId: string;
  writes: readonly PlannedWrite[];
  written: ReadonlySet<string>;
  plan: RoundPlan;
  now: Date;
  intent: RoundIntent;
  /** The intent's id, forgotten once the players' sets follow their profiles. */
  recorded: string;
}

/**
 * The writing half of a players round (WritePath decides, under the players' locks): new players numbered, the
 * round's intent recorded beside its device links, its profiles written (the commit point); then `follow`: the
 * players' sets (cohorts/cohort-sets.ts) and folds' activity, before the round answers, so every read after it sees it.
 */
export class RoundWriter {
  private readonly completion: RoundCompletion;

  constructor(private readonly options: RoundWriterOptions) {
    this.completion = new RoundCompletion({
      log: options.log,
      locks: options.locks,
      sync: (intent) => syncFromProfiles(options.stores, options.cohorts, intent),
      fold: (projectId, moves) => options.activity?.fold(projectId, moves) ?? Promise.resolve(),
    });
  }

  /**
   * Writes a round up to its commit point: numbers for its new players, its intent beside the device links, the
   * tombstones of folded profiles (each keeping the data its fold merges), then the profiles. Returns the identity
   * keys whose write lost to another process, and what `follow` writes after it (null: the round wrote nothing).
   */
  async commit(projectId: string, plan: RoundPlan, now: Date) {
    const { stores, numbers } = this.options;
    const newPlayers = [...plan.writes].flatMap(([key, { next }]) =>
      "profile" in next && next.profile.number === undefined ? [key] : [],
    );
    const numbered = newPlayers.length === 0 ? new Map<string, number>() : await numbers.assign(projectId, newPlayers);
    const writes: PlannedWrite[] = [...plan.writes].map(([identityKey, { read, next }]) => {
      const number = numbered.get(identityKey);
      return {
        identityKey,
        read,
        next: number === undefined || !("profile" in next) ? next : numberedAs(next, number),
      };
    });
    if (writes.length === 0 && plan.links.size === 0) return { lost: new Set<string>(), committed: null };
    const intent = intentOf(
      projectId,
      writes.map(({ identityKey, read, next }) => ({
        identityKey,
        read,
        number: ("profile" in next ? next.profile.number : undefined) ?? numberOf(read),
        after: membershipOf(next),
      })),
    );
    // Side by side, and both settled before a failure is thrown: no write is left running behind it.
    const [recording, linking] = await Promise.allSettled([
      stores.intents.record(intent, now),
      plan.links.size > 0 ? stores.devices.linkMany(projectId, plan.links, now) : undefined,
    ]);
    for (const step of [recording, linking]) if (step.status === "rejected") throw step.reason;
    const recorded = (recording as PromiseFulfilledResult<string>).value;
    let lost: Set<string>;
    try {
      const tombstones = writes.filter((w) => "foldedInto" in w.next);
      const lostTombstones = await this.writeSlots(projectId, tombstones);
      lost = new Set(tombstones.flatMap((w) => (lostTombstones.has(w.identityKey) ? [foldTarget(w)] : [])));
      const profiles = writes.filter((w) => "profile" in w.next && !lost.has(w.identityKey));
      for (const key of await this.writeSlots(projectId, profiles)) lost.add(key);
      for (const key of lostTombstones) lost.add(key);
    } catch (error) {
      // Some statements may have been applied: the sets follow the profiles as they are, whatever the call answers.
      this.completion.start({ intent, recorded, moves: foldMoves(writes, plan.links) }, this.options.stores.intents);
      throw error;
    }
    const written = new Set(writes.map((w) => w.identityKey).filter((key) => !lost.has(key)));
    // The round's commit point: every profile statement is acknowledged, so its entries are applied whatever follows.
    return { lost, committed: { projectId, writes, written, plan, now, intent, recorded } };
  }

  /**
   * After the commit point: the written players' sets and traits, the tags given (their last_seen_at), the folds'
   * activity; then the intent is forgotten. A failure is completed in the background.
   */
  async follow(round: CommittedRound): Promise<void> {
    const { projectId, writes, written, plan, now, intent, recorded } = round;
    const { cohorts, seen, stores, activity } = this.options;
    const done = writes.filter((w) => written.has(w.identityKey));
    const moves = foldMoves(done, plan.links);
    try {
      const changes = done.flatMap(({ read, next }) => {
        const number = ("profile" in next ? next.profile.number : undefined) ?? numberOf(read);
        const change = number === undefined ? null : memberChange(number, membershipOf(read), membershipOf(next));
        return change ? [change] : [];
      });
      await Promise.all([cohorts.write(projectId, changes), seen.given(projectId, plan.given, now)]);
      const overtaken = await stores.profiles.overtaken(projectId, done);
      if (overtaken.length > 0) {
        await syncFromProfiles(stores, cohorts, {
          ...intent,
          players: intent.players.filter((p) => overtaken.includes(p.key)),
        });
      }
      if (moves.length > 0) await activity?.fold(projectId, moves);
      await stores.intents.settle(recorded);
    } catch (error) {
      this.options.log?.warn(
        { projectId, error: (error as Error)?.message },
        "players round: profiles written, their sets not; completing them in the background",
      );
      this.completion.start({ intent, recorded, moves }, stores.intents);
    }
  }

  /**
   * Writes an erasure (decided under the players' locks), each part timed by `step`: `record` its intent, `mark` the
   * markers over its profiles (the commit point), `finish` its steps after it (erasure-finish.ts), before it answers. A
   * failure at or after the commit point answers unavailable and leaves them to the background while every marker is
   * in place, which a retry waits for (completedFor). Returns the keys whose write lost to another process: the
   * erasure then runs again.
   */
  async erase(projectId: string, erasure: Erasure, now: Date, step: Step): Promise<{ lost: Set<string> }> {
    const { stores } = this.options;
    const writes = [...erasure.writes].map(([identityKey, { read, next }]) => ({ identityKey, read, next }));
    const intent = intentOf(
      projectId,
      writes.map(({ identityKey, read }) => ({ identityKey, read, number: numberOf(read), after: null })),
    );
    const recorded = await step("record", () => stores.intents.record(intent, now));
    const unfinished = { intent, recorded, moves: [], finish: () => finishIfMarked(this.options, projectId, erasure) };
    let lost: Set<string>;
    try {
      lost = await step("mark", () => this.writeSlots(projectId, writes));
      // Should the rounds run out, no live player has lost its sets, its links or its activity.
      if (lost.size === 0) await step("finish", () => finishErasure(this.options, projectId, erasure));
      await stores.intents.settle(recorded);
    } catch (error) {
      this.completion.start(unfinished, stores.intents);
      throw error;
    }
    return { lost };
  }

  /** Failed rounds being completed in the background now. */
  get completionsRunning(): number {
    return this.completion.running;
  }

  /** Waits for the project's completions, up to `limitMs` (an erasure's retry finds its earlier attempt done). */
  async completedFor(projectId: string, limitMs: number | undefined): Promise<void> {
    const running = this.completion.of(projectId);
    if (running.length === 0) return;
    const all = Promise.all(running).then(() => true);
    const limiting = new AbortController();
    const limit =
      limitMs === undefined ? [] : [delay(limitMs, false, { ref: false, signal: limiting.signal }).catch(() => false)];
    try {
      if (!(await Promise.race([all, ...limit])))
        throw new UnavailableError("an earlier change of this project is still being completed; try again");
    } finally {
      limiting.abort();
    }
  }

  /** Waits for what runs behind the rounds (a clean stop). */
  settled(): Promise<void> {
    return this.completion.settled();
  }

  async writeSlots(projectId: string, writes: readonly PlannedWrite[]) {
    const lost = await this.options.stores.profiles.writeSlots(
      projectId,
      writes.map(({ identityKey, read, next }) => ({ identityKey, readVersion: read.version, next })),
    );
    return new Set([...lost].map((i) => writes[i].identityKey));
  }
}

const numberedAs = (next: { profile: NonNullable<ProfileSlot["profile"]> }, number: number): SlotContent => ({
  profile: { ...next.profile, number },
});

/** The profile a tombstone's fold writes into. */
const foldTarget = (write: PlannedWrite) => ("foldedInto" in write.next ? write.next.foldedInto : write.identityKey);
