import { setTimeout as delay } from "node:timers/promises";
import type { Clock } from "../../clock.js";
import { ContentionError } from "../../errors.js";
import {
  decideRound,
  foldEntry,
  type EntryDecision,
  type EntryRejectCode,
  type RoundEntry,
  type RoundPlan,
  type RoundReads,
} from "../rules/decide.js";
import type { DeviceLink } from "../storage/link-stores.js";
import { replayedProfiles } from "../rules/request-ids.js";
import { partnerOf } from "../rules/identity-key.js";
import type { ProfileSlot } from "../rules/profile.js";
import { profileLock, registryLock, touchedKeys } from "./round-locks.js";
import { RoundWriter, type RoundWriterOptions } from "./round-writer.js";
import type { Registration } from "./registration.js";
import { untimed, type Step } from "../../steps.js";

/** Rounds of one call before it gives up; only writers in other processes can make a round lose. */
const MAX_ROUNDS = 20;
/** The wait before a round that lost runs again: full jitter, doubling up to 100 ms, so a burst elsewhere ends first. */
const lostRoundBackoffMs = (round: number) => Math.random() * Math.min(100, 2 ** round);

export interface WritePathOptions extends RoundWriterOptions {
  registration: Registration;
  clock: Clock;
  /** How long a round waits for its players' locks before it answers unavailable, having written nothing. */
  lockWaitLimitMs?: number;
}

export type Final = Exclude<EntryDecision, { kind: "redirected" }>;

/** What the rounds of one call so far leave to the next: tombstones met, profiles written. */
interface CallSoFar {
  redirects: ReadonlyMap<string, string>;
  written: ReadonlySet<string>;
}

/** Compare-and-swap races of this instance's player writes since it started (exported as metrics). */
export interface WriteContention {
  /** Profile writes that lost to another writer (refused by the version guard); their entries run again. */
  conflicts: number;
  /** Calls given up after MAX_ROUNDS rounds: each failed with ContentionError. */
  exhausted: number;
}

/**
 * The write path of player profiles. A call is applied in rounds: read every
 * profile it touches (side by side by `_id`, the sole writer's from its cache), decide
 * every entry in memory in request order, register new names once, then write
 * (RoundWriter): the profiles together, then the players' sets.
 * Writes to a profile are serialised in this process by a lock held over the
 * whole round; between processes each profile write is guarded by the version
 * it was read at, and the entries of a profile that lost run again in the next round.
 */
export class WritePath {
  readonly contention: WriteContention = { conflicts: 0, exhausted: 0 };

  /** What writes the rounds: an erasure writes through it too (erasure-round.ts). */
  readonly writer: RoundWriter;

  constructor(private readonly options: WritePathOptions) {
    this.writer = new RoundWriter(options);
  }

  /**
   * The rounds of one call, each of steps `links`, `read`, `decide`, `commit` (the profiles written: the commit
   * point), `follow` (the players' sets, the folds' activity); then `fold`. `step` times them (players/update's).
   */
  async apply(projectId: string, entries: readonly RoundEntry[], step: Step = untimed): Promise<Map<number, Final>> {
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
      const { plan, lost } = await this.round(projectId, pending, { redirects, written }, step);
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
    await step("fold", () => this.foldLateLinks(projectId, entries, finals)).catch((error: unknown) =>
      this.options.log?.warn({ projectId, error: (error as Error)?.message }, "players: late device fold failed"),
    );
    return finals;
  }

  /** Failed rounds being completed in the background (exported as a metric). */
  get completionsRunning(): number {
    return this.writer.completionsRunning;
  }

  /** Waits for what the rounds left running behind them (RoundWriter.settled). */
  settled(): Promise<void> {
    return this.writer.settled();
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

  /** One round, under its players' locks: read what its entries touch, decide them (registering new names), write. */
  private async round(projectId: string, entries: readonly RoundEntry[], call: CallSoFar, step: Step) {
    const { stores, locks, lockWaitLimitMs } = this.options;
    const devices = [...new Set(entries.flatMap((entry) => (entry.deviceId === null ? [] : [entry.deviceId])))];
    const links = await step("links", () => stores.devices.findMany(projectId, devices));
    const keys = touchedKeys(entries, links, call.redirects);
    return locks.run(
      keys.map((key) => profileLock(projectId, key)),
      async () => {
        const reads = await step("read", () => this.read(projectId, entries, keys, links, call));
        const plan = await step("decide", () => this.decide(reads, entries));
        const { lost, committed } = await step("commit", () => this.writer.commit(projectId, plan, reads.now));
        if (committed) await step("follow", () => this.writer.follow(committed));
        return { plan, lost };
      },
      { waitLimitMs: lockWaitLimitMs },
    );
  }

  /** The round's profiles (the sole writer's from its cache where it holds them), and what decides new ones. */
  private async read(
    projectId: string,
    entries: readonly RoundEntry[],
    keys: readonly string[],
    links: ReadonlyMap<string, DeviceLink | null>,
    { redirects, written }: CallSoFar,
  ): Promise<RoundReads> {
    const slots = await this.options.stores.profiles.readSlots(projectId, keys);
    const accounts = await this.accountsOf(projectId, slots);
    const now = this.options.clock.now();
    const replayed = replayedProfiles(entries[0]?.requestId ?? null, slots, written, now);
    return { projectId, now, slots, links, accounts, redirects, replayed };
  }

  /** Every entry decided in memory; names new to the project registered, and entries over a project limit rejected. */
  private async decide(reads: RoundReads, entries: readonly RoundEntry[]): Promise<RoundPlan> {
    const { locks, registration, lockWaitLimitMs } = this.options;
    let rejected = new Map<number, EntryRejectCode>();
    let plan = decideRound(reads, entries, rejected);
    for (;;) {
      const more = await locks.run(
        [registryLock(reads.projectId)],
        () => registration.register(reads.projectId, plan.needs, reads.now),
        { waitLimitMs: lockWaitLimitMs },
      );
      if (more.size === 0) return plan;
      rejected = new Map([...rejected, ...more]);
      plan = decideRound(reads, entries, rejected);
    }
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
}
