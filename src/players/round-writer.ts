import type { KeyedLock } from "../db/keyed-lock.js";
import type { Logger } from "../log.js";
import type { RoundPlan } from "./decide.js";
import type { PendingWrite } from "./membership-journal-store.js";
import { movesAnyTag, tagMove, type TagMove } from "./membership.js";
import { MembershipWriter } from "./membership-writer.js";
import type { ProfileSlot, SlotContent } from "./profile-store.js";
import type { Registration } from "./registration.js";
import { RoundCompletion } from "./round-completion.js";
import type { PlayerStores } from "./stores.js";
import { writtenProfiles, type HistoryFollower } from "./written-profiles.js";

export interface RoundWriterOptions {
  stores: PlayerStores;
  registration: Registration;
  locks: KeyedLock;
  /** Other processes write the same profiles (MongoDB with several instances): membership is settled after each round. */
  sharedDatabase?: boolean;
  /** Told of each round's profiles and folds before they are written and after: event histories follow them. */
  histories?: HistoryFollower;
  log?: Logger;
}

interface PlannedWrite {
  identityKey: string;
  read: ProfileSlot;
  next: SlotContent;
}

/**
 * The writing half of a players round (WritePath decides, under the players'
 * locks): the round's intent, its profiles up to the commit point, then its
 * membership, counts and event histories.
 */
export class RoundWriter {
  private readonly completion: RoundCompletion;
  private readonly membership: MembershipWriter;

  constructor(private readonly options: RoundWriterOptions) {
    const { stores, locks, log, registration } = options;
    this.completion = new RoundCompletion({ stores, locks, log });
    this.membership = new MembershipWriter({ stores, registration, locks });
  }

  /**
   * Writes a round: its journal entry (when it moves any tag) beside the
   * device links (before any fold, see foldLateLinks), the tombstones of
   * folded profiles (each keeping the data its fold merges), then the
   * profiles; then, side by side, membership and counts and the players'
   * event histories. Once the profiles are written the round is done: a
   * failure after that is left to the background completion of its journal
   * document. Returns the identity keys whose write lost to another process,
   * or was not made because a profile folded into it changed after it was read here.
   */
  async write(projectId: string, plan: RoundPlan, now: Date): Promise<{ lost: Set<string> }> {
    const writes: PlannedWrite[] = [...plan.writes].map(([identityKey, { read, next }]) => ({
      identityKey,
      read,
      next,
    }));
    if (writes.length === 0 && plan.links.size === 0) return { lost: new Set<string>() };
    const moves = writes.map(({ identityKey, read, next }) => tagMove(identityKey, read, next));
    const { journal, recorded } = await this.beginRound(projectId, { moves, writes, plan, now });
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
      if (journal) void this.completion.start(journal);
      throw error;
    }
    // The round's commit point: every profile statement is acknowledged, so its entries are applied whatever follows.
    await this.afterCommit(projectId, { moves, writes, written, plan, now, journal, recorded });
    return { lost };
  }

  /**
   * The round's journal document (null when it moves no tag: only then can membership fall behind its profiles),
   * beside its device links and the record of the histories it may move (charts count them as of now from then
   * on). A failure after the journal is written starts its completion.
   */
  private async beginRound(projectId: string, round: Pick<CommittedRound, "moves" | "writes" | "plan" | "now">) {
    const { moves, writes, plan, now } = round;
    const { stores, histories } = this.options;
    const moving = moves.filter(movesAnyTag);
    const identityKeys = moving.map((move) => move.identityKey);
    const tags = [...new Set(moving.flatMap((move) => [...move.before, ...move.after]))];
    const [begun, linked, recording] = await Promise.allSettled([
      moving.length > 0 ? stores.journal.begin(projectId, identityKeys, tags, now) : null,
      plan.links.size > 0 ? stores.devices.linkMany(projectId, plan.links, now) : undefined,
      histories?.record(projectId, writtenProfiles(writes, new Set(writes.map((w) => w.identityKey)), plan.links)),
    ]);
    const journal: PendingWrite | null =
      begun.status === "fulfilled" && begun.value !== null
        ? { id: begun.value, projectId, identityKeys, tags, startedAt: now }
        : null;
    if (begun.status === "rejected") throw begun.reason;
    for (const step of [linked, recording]) {
      if (step.status === "rejected") {
        if (journal) void this.completion.start(journal);
        throw step.reason;
      }
    }
    return { journal, recorded: recording.status === "fulfilled" ? (recording.value ?? null) : null };
  }

  /**
   * After the commit point: membership and counts (then the journal's end)
   * beside the event histories' resync, which reads the profiles, not membership.
   */
  private async afterCommit(projectId: string, round: CommittedRound) {
    const { moves, writes, written, plan, now, journal, recorded } = round;
    const { stores, log } = this.options;
    const writtenMoves = moves.filter((move) => written.has(move.identityKey));
    const membership = (async () => {
      await this.membership.write(projectId, writtenMoves, plan.given, now);
      if (this.options.sharedDatabase) await this.membership.settle(projectId, writtenMoves, writes);
      if (journal) await stores.journal.end(journal.id);
    })();
    const histories = this.options.histories?.queue(projectId, writtenProfiles(writes, written, plan.links), recorded);
    const [members, events] = await Promise.allSettled([membership, histories]);
    if (members.status === "rejected") {
      log?.warn(
        { projectId, round: journal?.id, error: (members.reason as Error)?.message },
        "players round: profiles written, membership not; completing it in the background",
      );
      if (journal) void this.completion.start(journal);
    }
    if (events.status === "rejected") {
      log?.warn(
        { projectId, error: (events.reason as Error)?.message },
        "players round: profiles written, their event histories not queued; the recorded change is queued later",
      );
    }
  }

  private async writeSlots(projectId: string, writes: readonly PlannedWrite[]) {
    const lost = await this.options.stores.profiles.writeSlots(
      projectId,
      writes.map(({ identityKey, read, next }) => ({ identityKey, readVersion: read.version, next })),
    );
    return new Set([...lost].map((i) => writes[i].identityKey));
  }
}

/** A round whose profile writes are acknowledged: what is left to write after its commit point. */
interface CommittedRound {
  moves: readonly TagMove[];
  writes: readonly PlannedWrite[];
  written: ReadonlySet<string>;
  plan: RoundPlan;
  now: Date;
  journal: PendingWrite | null;
  /** The record of the event histories the round may move (HistoryFollower.record). */
  recorded: string | null;
}

/** The profile a tombstone's fold writes into. */
const foldTarget = (write: PlannedWrite) => ("foldedInto" in write.next ? write.next.foldedInto : write.identityKey);
