import { setTimeout as delay } from "node:timers/promises";
import type { Clock } from "../clock.js";
import { ContentionError } from "../errors.js";
import {
  decideRound,
  foldEntry,
  replayedProfiles,
  type EntryDecision,
  type RejectCode,
  type RoundEntry,
  type RoundPlan,
} from "./decide.js";
import type { DeviceLink } from "./device-link-store.js";
import { partnerOf } from "./identity-key.js";
import type { KeyedLock } from "../db/keyed-lock.js";
import type { Logger } from "../log.js";
import type { PendingWrite } from "./membership-journal-store.js";
import { movesAnyTag, tagMove, type TagMove } from "./membership.js";
import { MembershipWriter } from "./membership-writer.js";
import type { ProfileSlot, SlotContent } from "./profile-store.js";
import type { Registration } from "./registration.js";
import { profileLock, registryLock, touchedKeys } from "./round-locks.js";
import { RoundCompletion } from "./round-completion.js";
import type { PlayerStores } from "./stores.js";
import { writtenProfiles, type HistoryFollower } from "./written-profiles.js";

/** Rounds of one call before it gives up; only writers in other processes can make a round lose. */
const MAX_ROUNDS = 20;
/** The wait before a round that lost runs again: full jitter, doubling up to 100 ms, so a burst elsewhere ends first. */
const lostRoundBackoffMs = (round: number) => Math.random() * Math.min(100, 2 ** round);

export interface WritePathOptions {
  stores: PlayerStores;
  registration: Registration;
  locks: KeyedLock;
  clock: Clock;
  /** Other processes write the same profiles (MongoDB with several instances): membership is settled after each round. */
  sharedDatabase?: boolean;
  /** Told of each round's profiles and folds before they are written and after: event histories follow them. */
  histories?: HistoryFollower;
  log?: Logger;
  /** How long a round waits for its players' locks before it answers unavailable, having written nothing. */
  lockWaitLimitMs?: number;
}

export type Final = Exclude<EntryDecision, { kind: "redirected" }>;

/** Compare-and-swap races of this instance's player writes since it started (exported as metrics). */
export interface WriteContention {
  /** Profile writes that lost to another writer (refused by the version guard); their entries run again. */
  conflicts: number;
  /** Calls given up after MAX_ROUNDS rounds: each failed with ContentionError. */
  exhausted: number;
}

interface PlannedWrite {
  identityKey: string;
  read: ProfileSlot;
  next: SlotContent;
}

/**
 * The write path of player profiles. A call is applied in rounds: read every
 * profile it touches side by side by `_id`, decide every entry in memory in
 * request order, register new names once, write the profiles together, then
 * their tag membership and counts. Writes to a profile are serialised in this
 * process by a lock held over the whole round; between processes each profile
 * write is guarded by the version it was read at, and the entries of a profile
 * that lost run again in the next round.
 */
export class WritePath {
  readonly contention: WriteContention = { conflicts: 0, exhausted: 0 };

  private readonly completion: RoundCompletion;
  private readonly membership: MembershipWriter;

  constructor(private readonly options: WritePathOptions) {
    const { stores, locks, log, registration } = options;
    this.completion = new RoundCompletion({ stores, locks, log });
    this.membership = new MembershipWriter({ stores, registration, locks });
  }

  async apply(projectId: string, entries: readonly RoundEntry[]): Promise<Map<number, Final>> {
    const finals = new Map<number, Final>();
    const redirects = new Map<string, string>();
    /** Profiles this call wrote in its earlier rounds: a request_id they now carry is this attempt's own. */
    const written = new Set<string>();
    let pending = [...entries];
    for (let round = 0; pending.length > 0; round++) {
      if (round === MAX_ROUNDS) {
        this.contention.exhausted++;
        throw new ContentionError("too many concurrent writers to one player; retry");
      }
      const { plan, lost } = await this.round(projectId, pending, { redirects, written });
      for (const key of plan.writes.keys()) if (!lost.has(key)) written.add(key);
      this.contention.conflicts += lost.size;
      if (lost.size > 0) await delay(lostRoundBackoffMs(round));
      const retry: RoundEntry[] = [];
      for (const entry of pending) {
        const decision = plan.decisions.get(entry.index)!;
        if (decision.kind === "redirected") redirects.set(decision.from, decision.to);
        // Rejected entries too: a limit checked on a read another writer superseded is checked again.
        if (decision.kind === "redirected" || lost.has(decision.targetKey ?? "")) {
          retry.push(entry);
        } else finals.set(entry.index, decision);
      }
      pending = retry;
    }
    // The entries are applied: a late fold that fails is left to the next write through the device.
    await this.foldLateLinks(projectId, entries, finals).catch((error: unknown) =>
      this.options.log?.warn({ projectId, error: (error as Error)?.message }, "players: late device fold failed"),
    );
    return finals;
  }

  /**
   * A device-only write lands on the device's own profile; if a verify on
   * another instance linked the device meanwhile, that profile is folded into
   * the player's now (the verify links before it folds, so one of the two sees the other).
   */
  private async foldLateLinks(projectId: string, entries: readonly RoundEntry[], finals: Map<number, Final>) {
    const devices = entries.flatMap((entry) => {
      const final = finals.get(entry.index);
      return final?.kind === "applied" && final.targetKey?.startsWith("d:") && entry.deviceId ? [entry.deviceId] : [];
    });
    if (devices.length === 0) return;
    const links = await this.options.stores.devices.findMany(projectId, devices);
    await this.fold(projectId, links);
  }

  /** Folds each device's own profile into the profile of the player it is linked to. */
  async fold(projectId: string, links: ReadonlyMap<string, DeviceLink | null>): Promise<void> {
    const folds = [...links].flatMap(([deviceId, link], index) =>
      link ? [foldEntry({ index, partnerUserId: link.partnerUserId, deviceId })] : [],
    );
    if (folds.length > 0) await this.apply(projectId, folds);
  }

  private async round(
    projectId: string,
    entries: readonly RoundEntry[],
    { redirects, written }: { redirects: ReadonlyMap<string, string>; written: ReadonlySet<string> },
  ) {
    const { stores, locks } = this.options;
    const devices = [...new Set(entries.flatMap((entry) => (entry.deviceId === null ? [] : [entry.deviceId])))];
    const links = await stores.devices.findMany(projectId, devices);
    const keys = touchedKeys(entries, links, redirects);
    return locks.run(
      keys.map((key) => profileLock(projectId, key)),
      async () => {
        const slots = await stores.profiles.readSlots(projectId, keys, { fillMemory: true });
        const accounts = await this.accountsOf(projectId, slots);
        const now = this.options.clock.now();
        const replayed = replayedProfiles(entries[0]?.requestId ?? null, slots, written, now);
        const reads = { projectId, now, slots, links, accounts, redirects, replayed };
        let rejected = new Map<number, RejectCode>();
        let plan = decideRound(reads, entries, rejected);
        for (;;) {
          const more = await locks.run(
            [registryLock(projectId)],
            () => this.options.registration.register(projectId, plan.needs, reads.now),
            { waitLimitMs: this.options.lockWaitLimitMs },
          );
          if (more.size === 0) break;
          rejected = new Map([...rejected, ...more]);
          plan = decideRound(reads, entries, rejected);
        }
        return { plan, ...(await this.write(projectId, plan, reads.now)) };
      },
      { waitLimitMs: this.options.lockWaitLimitMs },
    );
  }

  /** The account link of each partner id among the keys without a profile: a verify may have come first. */
  private async accountsOf(projectId: string, slots: ReadonlyMap<string, ProfileSlot>) {
    const partners = [...slots].flatMap(([key, slot]) => {
      const partner = partnerOf(key);
      return partner !== null && !slot.profile && slot.foldedInto === null ? [partner] : [];
    });
    const found = await this.options.stores.accounts.findPlatformUsers(projectId, partners);
    return new Map(partners.map((partner, i) => [partner, found[i]]));
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
  private async write(projectId: string, plan: RoundPlan, now: Date) {
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
