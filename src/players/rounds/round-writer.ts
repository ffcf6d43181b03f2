import { setTimeout as delay } from "node:timers/promises";
import type { KeyedLock } from "../../db/keyed-lock.js";
import { UnavailableError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { RoundPlan } from "../rules/decide.js";
import { countDeltas, membershipChanges, movesAnyTag, tagMove, type TagMove } from "../rules/operations.js";
import { membersLock, statsLock } from "./round-locks.js";
import type { RoundMembership } from "../membership/membership-repair.js";
import type { ProfileSlot, SlotContent } from "../rules/profile.js";
import type { Registration } from "./registration.js";
import { RoundCompletion } from "./round-completion.js";
import type { PlayerStores } from "../storage/stores.js";
import { playerChange, writtenProfiles, type HistoryFollower, type WrittenProfile } from "./written-profiles.js";

export interface RoundWriterOptions {
  stores: PlayerStores;
  registration: Registration;
  locks: KeyedLock;
  /** Told of each round's profiles and folds once they and their membership are written: event histories follow them. */
  histories?: HistoryFollower;
  log?: Logger;
}

interface PlannedWrite {
  identityKey: string;
  read: ProfileSlot;
  next: SlotContent;
}

/** What a round recorded before it wrote: its change's id (null: nothing to record) and the membership it moves. */
export interface Begun {
  recorded: string | null;
  membership: RoundMembership;
  /** The profiles it writes, as if every write held: what its change names, and a failed round's resync covers. */
  planned: readonly WrittenProfile[];
}

/**
 * The writing half of a players round (WritePath decides, under the players'
 * locks): the round's changed players recorded, its profiles up to the commit point,
 * then its membership and counts, then the resync of its event histories. An
 * erasure (erasure-round.ts) writes through the same pieces.
 */
export class RoundWriter {
  private readonly completion: RoundCompletion;
  /** Resyncs waiting for their membership to be written behind (the owner), and completions running. */
  private readonly background = new Set<Promise<void>>();
  /** The completions of failed rounds running, by project: an erasure waits for its project's (completedFor). */
  private readonly completing = new Map<string, Set<Promise<void>>>();

  constructor(private readonly options: RoundWriterOptions) {
    const { stores, locks, log } = options;
    this.completion = new RoundCompletion({ stores, locks, log });
  }

  /**
   * Writes a round up to its commit point: its changed players recorded (when it moves any cohort or folds) beside
   * the device links (before any fold, see foldLateLinks), the tombstones of folded profiles (each keeping the data
   * its fold merges), then the profiles. Returns the identity keys whose write lost to another process, or was not
   * made because a profile folded into it changed after it was read here, and what `follow` writes after it (null:
   * the round wrote nothing). A failure before the commit point leaves its membership to the background completion.
   */
  async commit(
    projectId: string,
    plan: RoundPlan,
    now: Date,
  ): Promise<{ lost: Set<string>; committed: CommittedRound | null }> {
    const writes: PlannedWrite[] = [...plan.writes].map(([identityKey, { read, next }]) => ({
      identityKey,
      read,
      next,
    }));
    if (writes.length === 0 && plan.links.size === 0) return { lost: new Set<string>(), committed: null };
    const moves = writes.map(({ identityKey, read, next }) => tagMove(identityKey, read, next));
    const begun = await this.beginRound(projectId, { moves, writes, plan, now });
    let lost: Set<string>, written: Set<string>;
    try {
      const tombstones = writes.filter((w) => "foldedInto" in w.next);
      const lostTombstones = await this.writeSlots(projectId, tombstones);
      lost = new Set(tombstones.flatMap((w) => (lostTombstones.has(w.identityKey) ? [foldTarget(w)] : [])));
      const profiles = writes.filter((w) => "profile" in w.next && !lost.has(w.identityKey));
      for (const key of await this.writeSlots(projectId, profiles)) lost.add(key);
      written = new Set(
        [...profiles, ...tombstones].map((w) => w.identityKey).filter((k) => !lost.has(k) && !lostTombstones.has(k)),
      );
    } catch (error) {
      // Some statements may have been applied: membership follows the profiles as they are, whatever the call answers.
      this.completeLater(projectId, begun, begun.planned);
      throw error;
    }
    // The round's commit point: every profile statement is acknowledged, so its entries are applied whatever follows.
    return { lost, committed: { projectId, moves, writes, written, plan, now, begun } };
  }

  /**
   * The round's changed players recorded (what charts count as of now from then on, and
   * what a crash's repair completes), beside its device links. A failure
   * fails the round before any profile is written.
   */
  private async beginRound(
    projectId: string,
    round: Pick<CommittedRound, "moves" | "writes" | "plan" | "now">,
  ): Promise<Begun> {
    const { moves, writes, plan, now } = round;
    const { stores } = this.options;
    const moving = moves.filter(movesAnyTag);
    const membership: RoundMembership = {
      projectId,
      identityKeys: moving.map((move) => move.identityKey),
      tags: [...new Set(moving.flatMap((move) => [...move.before, ...move.after]))],
    };
    const planned = writtenProfiles(writes, new Set(writes.map((w) => w.identityKey)), plan.links);
    const change = playerChange(planned, membership.tags);
    const changes = change.identityKeys.length > 0 || change.folds.length > 0;
    // Side by side, and both settled before a failure is thrown: no write is left running behind it.
    const [recording, linking] = await Promise.allSettled([
      changes ? stores.changes.record(projectId, change, now) : null,
      plan.links.size > 0 ? stores.devices.linkMany(projectId, plan.links, now) : undefined,
    ]);
    for (const step of [recording, linking]) if (step.status === "rejected") throw step.reason;
    return { recorded: recording.status === "fulfilled" ? recording.value : null, membership, planned };
  }

  /** After the commit point: what the round's written profiles move (followWith). */
  async follow(round: CommittedRound): Promise<void> {
    const { projectId, moves, writes, written, plan, now, begun } = round;
    const resync = writtenProfiles(writes, written, plan.links);
    const writtenMoves = moves.filter((move) => written.has(move.identityKey));
    await this.followWith(projectId, writtenMoves, plan.given, now, begun, resync);
  }

  /**
   * After a commit point (a round's, an erasure's): membership and counts, then the event histories' resync (whose
   * apply settles the record, so it is queued only once membership is written); where membership is written behind
   * (the owner), the call does not wait for the resync, which waits for the membership. A failure is left to the
   * background completion.
   */
  async followWith(
    projectId: string,
    moves: readonly TagMove[],
    given: ReadonlySet<string>,
    now: Date,
    begun: Begun,
    resync: readonly WrittenProfile[],
  ): Promise<void> {
    try {
      await this.writeMembership(projectId, moves, given, now);
    } catch (error) {
      this.options.log?.warn(
        { projectId, error: (error as Error)?.message },
        "players round: profiles written, membership not; completing it in the background",
      );
      this.completeLater(projectId, begun, resync);
      return;
    }
    await this.options.stores.membership.callWaitsFor(this.track(this.queueResync(projectId, resync, begun.recorded)));
  }

  /** Waits for what runs behind the rounds: resyncs waiting for their membership, and completions (a clean stop). */
  async settled(): Promise<void> {
    while (this.background.size > 0) await Promise.all(this.background);
  }

  private track(work: Promise<void>): Promise<void> {
    this.background.add(work);
    const done = () => void this.background.delete(work);
    work.then(done, done);
    return work;
  }

  /**
   * Membership completed in the background, then `finish` (a failed erasure's), then the resync: a failed round's
   * profiles may be written or not.
   */
  completeLater(projectId: string, begun: Begun, resync: readonly WrittenProfile[], finish?: () => Promise<void>) {
    const work = this.completion.start(
      begun.membership,
      () => this.queueResync(projectId, resync, begun.recorded),
      finish,
    );
    const running = this.completing.get(projectId) ?? new Set();
    this.completing.set(projectId, running.add(work));
    const done = () => void (running.delete(work) && running.size === 0 && this.completing.delete(projectId));
    work.then(done, done);
    this.track(work);
  }

  /** Failed rounds (erasures among them) being completed in the background now. */
  get completionsRunning(): number {
    return [...this.completing.values()].reduce((count, running) => count + running.size, 0);
  }

  /**
   * Waits for the completions of the project's failed rounds, up to `limitMs`: a retry of an erasure whose profiles
   * were written before a failure finds nothing left to move, so it answers only once that erasure's membership is
   * complete. Unavailable when they outlast the limit (the database is still away).
   */
  async completedFor(projectId: string, limitMs: number | undefined): Promise<void> {
    const running = [...(this.completing.get(projectId) ?? [])];
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

  /**
   * The resync, once the round's membership is in the database (its apply settles the players' entries). A failure is
   * logged: the recorded players stay waiting, and the events side's check queues it again.
   */
  private async queueResync(projectId: string, resync: readonly WrittenProfile[], recorded: string | null) {
    try {
      await this.options.stores.membership.written(projectId);
      await this.options.histories?.queue(projectId, resync, recorded);
    } catch (error) {
      this.options.log?.warn(
        { projectId, error: (error as Error)?.message },
        "players round: profiles written, their event histories not queued; the recorded players are queued later",
      );
    }
  }

  /**
   * Membership and the tag counts of `moves`, and the last-given time of the `given` tags, in one write (the owner:
   * in its memory, written behind).
   */
  private async writeMembership(projectId: string, moves: readonly TagMove[], given: ReadonlySet<string>, now: Date) {
    const { stores, locks, registration } = this.options;
    const changes = membershipChanges(moves);
    const deltas = countDeltas(changes);
    const ids = await registration.tagIds(projectId, [...new Set([...deltas.keys(), ...given])]);
    const byId = (tags: Iterable<string>) => [...tags].filter((tag) => ids.has(tag)).map((tag) => ids.get(tag)!);
    const docLocks = stores.membership.bucketIds(projectId, changes).map(membersLock);
    const idDeltas = new Map([...deltas].flatMap(([tag, d]) => (ids.has(tag) ? [[ids.get(tag)!, d] as const] : [])));
    // Under both locks together, so a completion's recount never falls between.
    await locks.run([...docLocks, statsLock(projectId)], () =>
      stores.membership.apply(projectId, changes, { deltas: idDeltas, given: byId(given), now }),
    );
  }

  /** The profiles' slots written, each guarded by the version it was read at: the identity keys whose write lost. */
  async writeSlots(projectId: string, writes: readonly PlannedWrite[]): Promise<Set<string>> {
    const lost = await this.options.stores.profiles.writeSlots(
      projectId,
      writes.map(({ identityKey, read, next }) => ({ identityKey, readVersion: read.version, next })),
    );
    return new Set([...lost].map((i) => writes[i].identityKey));
  }
}

/** A round whose profile writes are acknowledged: what is left to write after its commit point. */
export interface CommittedRound {
  projectId: string;
  moves: readonly TagMove[];
  writes: readonly PlannedWrite[];
  written: ReadonlySet<string>;
  plan: RoundPlan;
  now: Date;
  begun: Begun;
}

/** The profile a tombstone's fold writes into. */
const foldTarget = (write: PlannedWrite) => ("foldedInto" in write.next ? write.next.foldedInto : write.identityKey);
