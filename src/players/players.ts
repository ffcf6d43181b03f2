import type { Clock } from "../clock.js";
import { settledBy } from "../deadline.js";
import type { PlayerActivityChanges } from "../events/player-directory.js";
import type { PlayerNumbers } from "../sets/player-numbers.js";
import { fail, ok } from "../errors.js";
import type { LaunchVerified } from "../launch/launch-tokens.js";
import type { Logger } from "../log.js";
import { foldEntry, type EntryRejectCode } from "./rules/decide.js";
import { deviceKey, partnerKey, sortKeys } from "./rules/identity-key.js";
import { unavailableOf } from "../db/errors.js";
import { KeyedLock } from "../db/keyed-lock.js";
import { MAX_TAGS_PER_PLAYER, MAX_TRAITS_PER_PLAYER, normaliseEntry, type EntryInput } from "./rules/operations.js";
import type { ProfileQuery } from "./rules/profile-match.js";
import type { ProfileRecord } from "./rules/profile.js";
import { MAX_TAGS_PER_PROJECT, MAX_TRAIT_KEYS_PER_PROJECT, type Registration } from "./rounds/registration.js";
import { Search, type TagRecord } from "./search.js";
import { StoredPlayerDirectory } from "./directory.js";
import type { PlayerStores } from "./storage/stores.js";
import type { TagMetadata } from "./storage/tag-store.js";
import type { CohortSets } from "./cohorts/cohort-sets.js";
import { IdentityOrder } from "./cohorts/identity-order.js";
import type { TagSeen } from "./cohorts/tag-seen.js";
import { registryLock } from "./rounds/round-locks.js";
import { fingerprintOf, UpdateReplays } from "./rounds/update-replays.js";
import { namesOf, type EntryOutcome, type UpdateAnswer } from "./rules/update-answer.js";
import { erasePlayer, findPlayer, type ErasureDeps, type ErasureOutcome } from "./rounds/erasure-round.js";
import { WritePath } from "./rounds/write-path.js";
import type { ErasedExposures } from "./rounds/erasure-finish.js";
import { notTimed, stepsOf, type Step, type StepTimer } from "../steps.js";

export type { WriteContention } from "./rounds/write-path.js";
export type { ErasureOutcome } from "./rounds/erasure-round.js";
export type { AppliedEntry, EntryOutcome, UpdateAnswer } from "./rules/update-answer.js";

export interface Identity {
  partnerUserId?: string;
  deviceId?: string;
}

export type UpdateEntry = EntryInput & Identity;

const REJECT_MESSAGES: Record<EntryRejectCode, string> = {
  player_tag_limit: `the player would carry more than ${MAX_TAGS_PER_PLAYER} tags`,
  player_trait_limit: `the player would carry more than ${MAX_TRAITS_PER_PLAYER} traits`,
  project_tag_limit: `the project would have more than ${MAX_TAGS_PER_PROJECT} tags`,
  project_trait_limit: `the project would have more than ${MAX_TRAIT_KEYS_PER_PROJECT} trait keys`,
  missing_identity: "an entry needs partner_user_id or device_id",
};

export interface PlayersOptions {
  stores: PlayerStores;
  /** The players' sets: tags, traits, profiles (cohorts/cohort-sets.ts). */
  cohorts: CohortSets;
  numbers: PlayerNumbers;
  registration: Registration;
  seen: TagSeen;
  /** The events side: folds' and erasures' activity, carried out before the call answers. */
  activity?: PlayerActivityChanges;
  /** The experiments' side: an erasure takes the players out of the variants' sets. */
  exposures?: ErasedExposures;
  clock: Clock;
  log?: Logger;
  /** How long a round waits for its players' locks before it answers unavailable. */
  lockWaitLimitMs?: number;
  /** Where players/update's steps are timed (`platform_step_seconds{path="update"}`); untimed without. */
  steps?: StepTimer;
}

/** Tombstones followed from a folded profile to the live one before a read gives up. */
const MAX_FOLD_HOPS = 8;

/**
 * Player tags and traits of every project: the use cases. Writes go through
 * the WritePath (rounds of side-by-side reads and batched writes, locks and
 * version guards, then the players' sets); reads of cohorts are set arithmetic (Search).
 */
export class Players {
  /** A round that found the database unavailable fails the calls then queued on its players at once. */
  private readonly locks = new KeyedLock(unavailableOf);
  private readonly stores: PlayerStores;
  private readonly clock: Clock;
  private readonly writes: WritePath;
  private readonly reads: Search;
  private readonly cohorts: CohortSets;
  /** players/update calls with a request_id: each answered once, its retries with the same answer. */
  readonly replays: UpdateReplays;
  /** The players as the events side reads them. */
  readonly directory: StoredPlayerDirectory;

  private readonly step: Step;
  private readonly deleteStep: Step;
  private readonly erasure: ErasureDeps;

  constructor({ stores, clock, steps = notTimed, ...options }: PlayersOptions) {
    this.stores = stores;
    this.step = stepsOf("update", steps);
    this.clock = clock;
    this.writes = new WritePath({ stores, locks: this.locks, clock, ...options });
    this.cohorts = options.cohorts;
    const order = new IdentityOrder(options.numbers);
    this.reads = new Search({ stores, cohorts: options.cohorts, order, seen: options.seen });
    this.directory = new StoredPlayerDirectory(options.cohorts, this.reads);
    this.replays = new UpdateReplays({ store: stores.updateRequests, clock, log: options.log });
    this.deleteStep = stepsOf("delete", steps);
    this.erasure = {
      stores,
      locks: this.locks,
      clock,
      writer: this.writes.writer,
      replays: this.replays,
      lockWaitLimitMs: options.lockWaitLimitMs,
    };
  }

  /**
   * players/update: applies entries; each applies whole or is rejected whole. Entries about one player apply in
   * request order. With `requestId` (players/update's request_id), the call runs once and its answer is kept a day
   * for its retries (UpdateReplays), and the profiles written carry it: a retry after a failure leaves the entries an
   * earlier attempt applied to them as they are.
   */
  async update(projectId: string, entries: readonly UpdateEntry[], requestId?: string): Promise<UpdateAnswer> {
    if (requestId === undefined) return this.apply(projectId, entries);
    return this.replays.once(projectId, requestId, fingerprintOf(entries), async () => {
      const answer = await this.apply(projectId, entries, requestId);
      return { answer, names: namesOf(entries, answer) };
    });
  }

  /** One run of players/update. Its steps: the write path's rounds (WritePath.apply). */
  private async apply(projectId: string, entries: readonly UpdateEntry[], requestId?: string): Promise<UpdateAnswer> {
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
    const outcomes = entries.map((_, index): EntryOutcome => {
      const final = finals.get(index)!;
      if (final.kind === "rejected") return fail({ code: final.code, message: REJECT_MESSAGES[final.code] });
      const { identityKey, partnerUserId, deviceId, platformUserId, tags } = final.profile!;
      return ok({ identityKey, partnerUserId, deviceId, platformUserId, tags, dropped: final.dropped });
    });
    return { outcomes, serverTime: this.clock.now() };
  }

  /** A player's profile (null: none) and every identity key whose events are theirs (players/data). */
  async keysOf(projectId: string, identity: { partnerUserId: string } | { deviceId: string }) {
    const { slot, keys } = await findPlayer(this.stores, projectId, identity);
    return { profile: slot.profile, identityKeys: keys };
  }

  /**
   * players/delete: erases a player everywhere, its steps listed in erasePlayer (rounds/erasure-round.ts) and timed as
   * `platform_step_seconds{path="delete"}`: whether the project knew them, and their identity key.
   */
  delete(projectId: string, identity: { partnerUserId: string } | { deviceId: string }): Promise<ErasureOutcome> {
    return erasePlayer(this.erasure, projectId, identity, this.deleteStep);
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

  /** A clean stop, once no call is left: what the rounds left running behind them, within `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    await settledBy(this.writes.settled(), Date.now() + graceMs);
  }

  /**
   * Marks a trait key materialised (null: the project has no such key). Every key's cohorts are sets read from its
   * column, so a materialised one is ready at once; the mark says the studio asked for it (or it proved low-cardinality).
   */
  async materialiseTrait(projectId: string, key: string): Promise<{ ready: boolean } | null> {
    if (!(await this.stores.traitKeys.findRegistered(projectId, [key])).has(key)) return null;
    await this.stores.traitKeys.materialise(projectId, key);
    return { ready: true };
  }

  /**
   * Per trait key, whether it is materialised (asked for, or proved low-cardinality: once PROOF_HOLDERS of its
   * players show at most MAX_COHORT_VALUES values, marked from then on) and ready (the same: no back-fill waits).
   */
  async traitMaterialisation(projectId: string, keys: readonly string[]) {
    const marked = await this.stores.traitKeys.materialised(projectId, keys);
    for (const key of keys.filter((one) => !marked.has(one))) {
      if (await this.cohorts.lowCardinality(projectId, key)) {
        await this.stores.traitKeys.materialise(projectId, key);
        marked.add(key);
      }
    }
    return keys.map((key) => ({ materialised: marked.has(key), ready: marked.has(key) }));
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

  /** Every profile of a cohort in identity key order, read as it is consumed. */
  export(projectId: string, query: ProfileQuery): AsyncGenerator<ProfileRecord> {
    return this.reads.export(projectId, query);
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
