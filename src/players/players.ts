import type { Clock } from "../clock.js";
import { settledBy } from "../deadline.js";
import { fail, ok, type Rejection, type Result } from "../errors.js";
import type { LaunchVerified } from "../launch/launch-tokens.js";
import type { Logger } from "../log.js";
import { foldEntry, type EntryRejectCode } from "./rules/decide.js";
import { deviceKey, partnerKey, sortKeys } from "./rules/identity-key.js";
import { unavailableOf } from "../db/errors.js";
import { KeyedLock } from "../db/keyed-lock.js";
import {
  MAX_TAGS_PER_PLAYER,
  MAX_TRAITS_PER_PLAYER,
  normaliseEntry,
  type DroppedItem,
  type EntryInput,
} from "./rules/operations.js";
import type { ProfileQuery } from "./rules/profile-match.js";
import type { ProfileRecord } from "./rules/profile.js";
import { MAX_TAGS_PER_PROJECT, MAX_TRAIT_KEYS_PER_PROJECT, Registration } from "./rounds/registration.js";
import { exportProfiles } from "./export.js";
import { Search, type TagRecord } from "./search.js";
import { StoredPlayerDirectory } from "./directory.js";
import type { ChangedPlayers } from "./changed-players.js";
import type { PlayerStores } from "./storage/stores.js";
import type { TagMetadata } from "./storage/tag-store.js";
import { ChangesLimit } from "./rounds/changes-limit.js";
import { registryLock } from "./rounds/round-locks.js";
import { UpdateReplays } from "./rounds/update-replays.js";
import { playerKeys, type ErasureOutcome } from "./rounds/erasure-round.js";
import { WritePath, type WritePathOptions } from "./rounds/write-path.js";
import { notTimed, stepsOf, type Step, type StepTimer } from "../steps.js";

export type { WriteContention } from "./rounds/write-path.js";
export type { ErasureOutcome } from "./rounds/erasure-round.js";
export type { WrittenProfile } from "./rounds/written-profiles.js";

export interface Identity {
  partnerUserId?: string;
  deviceId?: string;
}

export type UpdateEntry = EntryInput & Identity;

export interface AppliedEntry {
  profile: ProfileRecord;
  dropped: DroppedItem[];
}

/** An entry applies whole or is rejected whole. */
export type EntryOutcome = Result<AppliedEntry, Rejection<EntryRejectCode>>;

const REJECT_MESSAGES: Record<EntryRejectCode, string> = {
  player_tag_limit: `the player would carry more than ${MAX_TAGS_PER_PLAYER} tags`,
  player_trait_limit: `the player would carry more than ${MAX_TRAITS_PER_PLAYER} traits`,
  project_tag_limit: `the project would have more than ${MAX_TAGS_PER_PROJECT} tags`,
  project_trait_limit: `the project would have more than ${MAX_TRAIT_KEYS_PER_PROJECT} trait keys`,
  missing_identity: "an entry needs partner_user_id or device_id",
};

export interface PlayersOptions {
  stores: PlayerStores;
  clock: Clock;
  /** Told of each round's written profiles and folds (updates, verifies) once they and their membership are written. */
  histories?: WritePathOptions["histories"];
  log?: Logger;
  lockWaitLimitMs?: WritePathOptions["lockWaitLimitMs"];
  /** Changed players of a project waiting for their resync past which updates are refused (PLAYER_CHANGES_MAX). */
  maxChangedPlayers?: number;
  /** Whether segments (the resyncs among them) wait behind the event queue's apply cursor. */
  queueBehind?: () => Promise<boolean>;
  /** Where players/update's steps are timed (`platform_step_seconds{path="update"}`); untimed without. */
  steps?: StepTimer;
}

/** Tombstones followed from a folded profile to the live one before a read gives up. */
const MAX_FOLD_HOPS = 8;

/**
 * Player tags and traits of every project: the use cases. Writes go through
 * the WritePath (rounds of side-by-side reads and batched writes, locks and
 * version guards); reads of cohorts go through tag membership (Search).
 */
export class Players {
  /** A round that found the database unavailable fails the calls then queued on its players at once. */
  private readonly locks = new KeyedLock(unavailableOf);
  private readonly stores: PlayerStores;
  private readonly clock: Clock;
  private readonly writes: WritePath;
  private readonly reads: Search;
  /** players/update calls with a request_id: each answered once, its retries with the same answer. */
  readonly replays: UpdateReplays;
  /** The players as the events side reads them. */
  readonly directory: StoredPlayerDirectory;
  /** The changes rounds record before they write: the event charts count them as of now until the worker settles them. */
  readonly changes: ChangedPlayers;

  private readonly log: Logger | undefined;
  private readonly registration: Registration;
  private readonly changesLimit: ChangesLimit;
  private readonly step: Step;

  constructor({
    stores,
    clock,
    maxChangedPlayers = Infinity,
    queueBehind = async () => true,
    steps = notTimed,
    ...options
  }: PlayersOptions) {
    this.stores = stores;
    this.step = stepsOf("update", steps);
    this.changesLimit = new ChangesLimit({ changes: stores.changes, clock, max: maxChangedPlayers, queueBehind });
    this.log = options.log;
    this.clock = clock;
    this.changes = stores.changes;
    this.registration = new Registration(stores);
    this.writes = new WritePath({ stores, registration: this.registration, locks: this.locks, clock, ...options });
    this.reads = new Search(stores);
    this.directory = new StoredPlayerDirectory(stores, this.reads);
    this.replays = new UpdateReplays({ store: stores.updateRequests, clock, log: options.log });
  }

  /**
   * players/update: applies entries; each applies whole or is rejected whole. Entries about one player apply in
   * request order. With `requestId` (players/update's request_id), the profiles written carry it for a day: a retry
   * after a failure leaves the entries an earlier attempt applied to them as they are. Its steps: `admit` (the record
   * of changed players has room), then the write path's rounds (WritePath.apply).
   */
  async update(projectId: string, entries: readonly UpdateEntry[], requestId?: string): Promise<EntryOutcome[]> {
    await this.step("admit", () => this.changesLimit.admit(projectId));
    const finals = await this.writes.apply(
      projectId,
      entries.map((entry, index) => ({
        index,
        partnerUserId: entry.partnerUserId ?? null,
        deviceId: entry.deviceId ?? null,
        foldKey: null,
        ops: normaliseEntry(entry),
        platformUserId: null,
        createsProfile: true,
        requestId: requestId ?? null,
      })),
      this.step,
    );
    return entries.map((_, index) => {
      const final = finals.get(index)!;
      if (final.kind === "rejected") return fail({ code: final.code, message: REJECT_MESSAGES[final.code] });
      return ok({ profile: final.profile!, dropped: final.dropped });
    });
  }

  /** A player's profile (null: none) and every identity key whose events are theirs (players/data). */
  keysOf(projectId: string, identity: { partnerUserId: string } | { deviceId: string }) {
    return playerKeys(this.stores, projectId, identity);
  }

  /** Erases a player everywhere (WritePath.erase): whether the project knew them, and their identity key. */
  erase(projectId: string, identity: { partnerUserId: string } | { deviceId: string }): Promise<ErasureOutcome> {
    return this.writes.erase(projectId, identity);
  }

  /**
   * The launch-verify hook: the installation is the verified user's device.
   * Links it, ties the partner profile to the platform user, and folds into
   * it the device's own profile and the profile of the partner id the
   * platform user's last verify named, if the studio linked another one since
   * (a pseudonymous start). Creates no profile for a player that has none.
   * Idempotent: a repeat with nothing new to fold or link writes nothing.
   */
  async onLaunchVerified({ projectId, platformUserId, partnerUserId, installationId }: LaunchVerified): Promise<void> {
    const { accounts, platformUsers } = this.stores;
    const [account, previous] = await Promise.all([
      accounts.findPlatformUser(projectId, partnerUserId),
      platformUsers.findPartner(projectId, platformUserId),
    ]);
    if (account !== platformUserId) await accounts.link(projectId, partnerUserId, platformUserId, this.clock.now());
    const fold = (index: number, deviceId: string | null, foldKey: string | null) =>
      foldEntry({ index, partnerUserId, deviceId, foldKey, platformUserId });
    const entries = [fold(0, installationId, null)];
    if (previous !== null && previous !== partnerUserId) entries.unshift(fold(1, null, partnerKey(previous)));
    await this.writes.apply(projectId, entries);
    if (previous !== partnerUserId) await platformUsers.setPartner(projectId, platformUserId, partnerUserId);
  }

  /** The live profile of a partner or device id, following folds. */
  async get(
    projectId: string,
    identity: { partnerUserId: string } | { deviceId: string },
  ): Promise<ProfileRecord | null> {
    return (await this.find(projectId, identity)).profile;
  }

  /** The player an id names now (a linked device's player, a folded profile's target) and their profile, if any. */
  async find(
    projectId: string,
    identity: { partnerUserId: string } | { deviceId: string },
  ): Promise<{ identityKey: string; profile: ProfileRecord | null }> {
    let key: string;
    if ("partnerUserId" in identity) key = partnerKey(identity.partnerUserId);
    else {
      const link = await this.stores.devices.find(projectId, identity.deviceId);
      key = link ? partnerKey(link.partnerUserId) : deviceKey(identity.deviceId);
    }
    for (let hop = 0; hop < MAX_FOLD_HOPS; hop++) {
      const slot = (await this.stores.profiles.readSlots(projectId, [key])).get(key)!;
      if (slot.foldedInto === null) return { identityKey: key, profile: slot.profile };
      key = slot.foldedInto;
    }
    return { identityKey: key, profile: null };
  }

  /**
   * A clean stop, once no call is left, all within `graceMs`: membership kept in memory is written, then the resyncs
   * that waited for it are queued, and the changed players the owner settled are removed from the record. What the
   * time does not allow is left as a crash leaves it, to the next start's repairs (membership re-derived from the
   * profiles, changed players resynced).
   */
  async stop(graceMs: number): Promise<void> {
    const deadline = Date.now() + graceMs;
    const warn = (what: string) => (error: unknown) =>
      this.log?.warn({ error: (error as Error)?.message }, `players: ${what} not written at stop`);
    const late = (what: string) =>
      this.log?.warn(`players: ${what} not written by the stop's deadline; the next start repairs it`);
    const membership = this.stores.membership.writeBehindNow().catch(warn("membership kept in memory"));
    if (!(await settledBy(membership, deadline))) return late("membership kept in memory");
    await settledBy(this.writes.settled(), deadline);
    if (!(await settledBy(this.stores.changes.writeSettled().catch(warn("settled changes")), deadline))) {
      late("settled changes");
    }
  }

  /** Membership and count documents changed in the owner's memory, not yet written (a metric). */
  get unwrittenMembership(): number {
    return this.stores.membership.waitingWrites;
  }

  /**
   * Fills the owner's memory of a project (a start, before it is ready): its profiles, membership, account links and
   * changed players, and the registered tags' ids.
   */
  async fillOwnerMemory(projectId: string): Promise<void> {
    await Promise.all([
      this.stores.profiles.fillMemory(projectId),
      this.stores.membership.fill(projectId),
      this.stores.accounts.fillMemory(projectId),
      this.stores.changes.waiting(projectId),
      this.registration.learnTags(projectId),
    ]);
  }

  /** Compare-and-swap races of this instance's player writes (exported as metrics). */
  get contention() {
    return this.writes.contention;
  }

  /** Rounds and erasures that failed at or after their commit point, being completed in the background (a metric). */
  get completionsRunning(): number {
    return this.writes.completionsRunning;
  }

  /** One page of the project's trait keys in code point order, and how many there are. */
  async listTraitKeys(projectId: string, page: number, pageSize: number): Promise<{ keys: string[]; total: number }> {
    const keys = sortKeys(await this.stores.traitKeys.listInProject(projectId));
    const skip = (page - 1) * pageSize;
    return { keys: keys.slice(skip, skip + pageSize), total: keys.length };
  }

  /** Every profile of a cohort in identity key order, read as it is consumed (export.ts). */
  export(projectId: string, query: ProfileQuery): AsyncGenerator<ProfileRecord> {
    return exportProfiles(this.stores, projectId, query);
  }

  search(...args: Parameters<Search["search"]>) {
    return this.reads.search(...args);
  }

  listTags(...args: Parameters<Search["listTags"]>) {
    return this.reads.listTags(...args);
  }

  /** Null for a tag the project does not have. */
  async updateTag(projectId: string, tag: string, metadata: TagMetadata): Promise<TagRecord | null> {
    const record = await this.locks.run([registryLock(projectId)], async () => {
      if (!(await this.stores.tags.findTag(projectId, tag))) return null;
      return this.stores.tags.updateMetadata(projectId, tag, metadata);
    });
    return record && this.reads.withStats(projectId, [record]).then(([withStats]) => withStats);
  }
}
