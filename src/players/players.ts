import type { Clock } from "../clock.js";
import { ContentionError } from "../errors.js";
import { fail, ok, type Result } from "../result.js";
import { entryChains, runLimited } from "./entry-chains.js";
import { deviceKey, partnerKey } from "./identity-key.js";
import { KeyedLock } from "./keyed-lock.js";
import {
  applyOperations,
  foldDevice,
  inFieldOrder,
  MAX_TAGS_PER_PLAYER,
  MAX_TRAITS_PER_PLAYER,
  normaliseEntry,
  playerLimitBroken,
  tagCountDeltas,
  type DroppedItem,
  type EntryInput,
  type Operations,
  type PlayerState,
} from "./operations.js";
import type { PlayerStore, ProfileQuery, ProfileRecord, TagMetadata, TagRecord } from "./store.js";
import type { LaunchVerified } from "../launch/launch-tokens.js";

export const MAX_TAGS_PER_PROJECT = 500;
export const MAX_TRAIT_KEYS_PER_PROJECT = 200;
/** Compare-and-swap attempts per entry; only writers in other processes can make one fail. */
const MAX_ATTEMPTS = 20;
/** Entries of one call about different players in flight at once. */
const ENTRY_CONCURRENCY = 8;

export type RejectCode =
  "player_tag_limit" | "player_trait_limit" | "project_tag_limit" | "project_trait_limit" | "missing_identity";

export interface Identity {
  partnerUserId?: string;
  deviceId?: string;
}

export type UpdateEntry = EntryInput & Identity;

export interface AppliedEntry {
  profile: ProfileRecord;
  dropped: DroppedItem[];
}

export interface Rejection {
  code: RejectCode;
  message: string;
}

/** An entry applies whole or is rejected whole. */
export type EntryOutcome = Result<AppliedEntry, Rejection>;

const REJECT_MESSAGES: Record<RejectCode, string> = {
  player_tag_limit: `the player would carry more than ${MAX_TAGS_PER_PLAYER} tags`,
  player_trait_limit: `the player would carry more than ${MAX_TRAITS_PER_PLAYER} traits`,
  project_tag_limit: `the project would have more than ${MAX_TAGS_PER_PROJECT} tags`,
  project_trait_limit: `the project would have more than ${MAX_TRAIT_KEYS_PER_PROJECT} trait keys`,
  missing_identity: "an entry needs partner_user_id or device_id",
};

const NO_OPERATIONS: Operations = normaliseEntry({ tagsAdd: [], tagsRemove: [], traitsIncrement: {}, traitsUnset: [] });

interface Target {
  projectId: string;
  /** The profile written: "u:<partner>" or "d:<device>". */
  identityKey: string;
  partnerUserId: string | null;
  /** A device whose own profile is folded into a partner profile by this write. */
  foldDeviceId: string | null;
  /** A device-only write; it must land on the real profile if the device got linked meanwhile. */
  deviceOnlyId: string | null;
}

/** Compare-and-swap races of this instance's player writes since it started (exported as metrics). */
export interface WriteContention {
  /** Attempts that lost to another writer (refused by a version, insert or link guard); each is tried again. */
  conflicts: number;
  /** Writes given up after MAX_ATTEMPTS conflicts: each failed its call with ContentionError. */
  exhausted: number;
}

/** A compare-and-swap attempt fails with "conflict" when another writer changed the profile since it was read. */
type Attempt<T> = Result<T, "conflict">;

const stateOf = (profile: ProfileRecord | null): PlayerState => ({
  tags: profile?.tags ?? [],
  traits: profile?.traits ?? new Map(),
});

/**
 * Player tags and traits of every project. Writes to one profile are
 * serialised in this process (KeyedLock) and guarded by the profile's
 * version between processes; project limits are held by a count guard on the
 * project's registry counter, taken before a new tag or trait key is used.
 */
export class Players {
  private readonly locks = new KeyedLock();
  /**
   * Tags and trait keys known to be registered, per project. Registrations are
   * never removed, so what is in here stays true; it saves the registry lookups
   * of most entries.
   */
  private readonly knownTags = new Map<string, Set<string>>();
  private readonly knownKeys = new Map<string, Set<string>>();
  readonly contention: WriteContention = { conflicts: 0, exhausted: 0 };

  constructor(
    private readonly store: PlayerStore,
    private readonly clock: Clock,
  ) {}

  /**
   * Applies entries; each applies whole or is rejected whole. Entries about
   * one player apply in request order; entries about different players run
   * side by side (a few at a time).
   */
  async update(projectId: string, entries: readonly UpdateEntry[]): Promise<EntryOutcome[]> {
    const deviceOnly = entries
      .filter((e) => e.partnerUserId === undefined && e.deviceId !== undefined)
      .map((e) => e.deviceId!);
    const owners = await this.store.findDeviceOwners(projectId, deviceOnly);
    const targets = entries.map((entry) => targetOf(projectId, entry, owners));
    const keys = entries.map((entry, i) => [
      ...(entry.partnerUserId === undefined ? [] : [partnerKey(entry.partnerUserId)]),
      ...(entry.deviceId === undefined ? [] : [deviceKey(entry.deviceId)]),
      ...(targets[i] ? [targets[i].identityKey] : []),
    ]);
    const outcomes: EntryOutcome[] = new Array(entries.length);
    const counts = new TagCountChanges();
    try {
      await runLimited(entryChains(keys), ENTRY_CONCURRENCY, async (chain) => {
        for (const i of chain) {
          const target = targets[i];
          const ops = normaliseEntry(entries[i]);
          outcomes[i] = target
            ? await this.withRetries(target, (current) => this.attemptUpdate(current, ops, counts))
            : reject("missing_identity");
        }
      });
    } finally {
      // One $inc per distinct change for the whole call, also for the entries written before a failure.
      await this.applyCounts(projectId, counts);
    }
    return outcomes;
  }

  /**
   * The launch-verify hook: the installation is the verified user's device.
   * Links it, marks the partner profile linked to the platform user, and folds
   * the device's profile into the partner's. Creates no profile for a player
   * that has none.
   *
   * A device already linked by a verify of the same user and partner id, with
   * no profile of its own, needs none of that: the launch costs two reads. A
   * device profile can outlive the link only when an update on another
   * instance raced the verify that linked it; this verify folds it then.
   */
  async onLaunchVerified({ projectId, platformUserId, partnerUserId, installationId }: LaunchVerified): Promise<void> {
    const [link, deviceProfile] = await Promise.all([
      this.store.findDeviceLink(projectId, installationId),
      this.store.findProfile(projectId, deviceKey(installationId)),
    ]);
    if (!deviceProfile && link?.partnerUserId === partnerUserId && link.platformUserId === platformUserId) return;
    await this.store.linkAccount(projectId, partnerUserId, platformUserId, this.clock.now());
    const target: Target = {
      projectId,
      identityKey: partnerKey(partnerUserId),
      partnerUserId,
      foldDeviceId: installationId,
      deviceOnlyId: null,
    };
    const counts = new TagCountChanges();
    try {
      await this.withRetries(target, (current) => this.attemptFold(current, platformUserId, counts));
    } finally {
      await this.applyCounts(projectId, counts);
    }
  }

  async get(
    projectId: string,
    identity: { partnerUserId: string } | { deviceId: string },
  ): Promise<ProfileRecord | null> {
    if ("partnerUserId" in identity) return this.store.findProfile(projectId, partnerKey(identity.partnerUserId));
    const { identityKey } = await this.resolveDevice(projectId, identity.deviceId);
    return this.store.findProfile(projectId, identityKey);
  }

  search(projectId: string, query: ProfileQuery, page: number, pageSize: number) {
    return this.store.searchProfiles(projectId, query, (page - 1) * pageSize, pageSize);
  }

  async listTags(
    projectId: string,
    query: { textPattern?: string; category?: string | null },
    page: number,
    pageSize: number,
  ) {
    const [{ tags, total }, categories] = await Promise.all([
      this.store.listTags(projectId, query, (page - 1) * pageSize, pageSize),
      this.store.categories(projectId),
    ]);
    return { tags, total, categories };
  }

  /** Null for a tag the project does not have. */
  async updateTag(projectId: string, tag: string, metadata: TagMetadata): Promise<TagRecord | null> {
    // Under the registry lock: on FerretDB a concurrent players_count $inc would otherwise be lost.
    return this.locks.run([registryLock(projectId)], async () => {
      if (!(await this.store.findTag(projectId, tag))) return null;
      return this.store.updateTagMetadata(projectId, tag, metadata);
    });
  }

  private async resolveDevice(projectId: string, deviceId: string): Promise<Target> {
    const owners = await this.store.findDeviceOwners(projectId, [deviceId]);
    return targetOf(projectId, { deviceId }, owners)!;
  }

  private async withRetries<T>(initial: Target, attempt: (target: Target) => Promise<Attempt<T>>): Promise<T> {
    let target = initial;
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const keys = [profileLock(target.projectId, target.identityKey)];
      if (target.foldDeviceId !== null) keys.push(profileLock(target.projectId, deviceKey(target.foldDeviceId)));
      const result = await this.locks.run(keys, () => attempt(target));
      if (result.ok) return result.value;
      this.contention.conflicts++;
      if (target.deviceOnlyId !== null) target = await this.resolveDevice(target.projectId, target.deviceOnlyId);
    }
    this.contention.exhausted++;
    throw new ContentionError("too many concurrent writers to one player; retry");
  }

  /** One compare-and-swap attempt of an update entry, run holding the profile locks. */
  private async attemptUpdate(
    target: Target,
    ops: Operations,
    counts: TagCountChanges,
  ): Promise<Attempt<EntryOutcome>> {
    const { projectId, deviceOnlyId } = target;
    // A device folded into a real profile since it was resolved: write there instead.
    if (deviceOnlyId !== null && (await this.store.findDeviceOwners(projectId, [deviceOnlyId])).size > 0)
      return fail("conflict");
    const [current, device] = await this.readProfiles(target);
    return this.write(target, current, device, ops, null, counts);
  }

  /** One attempt of the launch-verify fold, run holding the profile locks. */
  private async attemptFold(target: Target, platformUserId: string, counts: TagCountChanges): Promise<Attempt<void>> {
    const [current, device] = await this.readProfiles(target);
    if (!device && (!current || current.platformUserId === platformUserId)) {
      await this.store.linkDevice(
        target.projectId,
        target.foldDeviceId!,
        { partnerUserId: target.partnerUserId!, platformUserId },
        this.clock.now(),
      );
      return ok(undefined);
    }
    const written = await this.write(target, current, device, NO_OPERATIONS, platformUserId, counts);
    return written.ok ? ok(undefined) : written;
  }

  private readProfiles({
    projectId,
    identityKey,
    foldDeviceId,
  }: Target): Promise<[ProfileRecord | null, ProfileRecord | null]> {
    return Promise.all([
      this.store.findProfile(projectId, identityKey),
      foldDeviceId === null ? null : this.store.findProfile(projectId, deviceKey(foldDeviceId)),
    ]);
  }

  /**
   * Computes the profile that `current` (with `device` folded in) becomes
   * under `ops`, registers what is new to the project, and writes it if no
   * other writer changed the profile since it was read.
   */
  private async write(
    target: Target,
    current: ProfileRecord | null,
    device: ProfileRecord | null,
    ops: Operations,
    platformUserId: string | null,
    counts: TagCountChanges,
  ): Promise<Attempt<EntryOutcome>> {
    const { projectId, identityKey, partnerUserId, foldDeviceId, deviceOnlyId } = target;
    const now = this.clock.now();
    const base = device ? foldDevice(stateOf(current), stateOf(device)) : stateOf(current);
    const { state: next, dropped: droppedIncrements } = applyOperations(base, ops);
    const playerLimit = playerLimitBroken(next);
    if (playerLimit) return ok(reject(playerLimit));

    const newTags = next.tags.filter((tag) => !base.tags.includes(tag));
    const newKeys = [...next.traits.keys()].filter((key) => !base.traits.has(key));
    const registered = await this.locks.run([registryLock(projectId)], () =>
      this.register(projectId, newTags, newKeys, ops.labels, now),
    );
    if (!registered.ok) return ok(reject(registered.error));

    const profile: ProfileRecord = {
      projectId,
      identityKey,
      partnerUserId,
      deviceId: partnerUserId === null ? deviceOnlyId : null,
      platformUserId:
        platformUserId ?? (current ? current.platformUserId : await this.platformUserOf(projectId, partnerUserId)),
      tags: next.tags,
      traits: next.traits,
      version: current?.version ?? 0,
      firstSeenAt: earliest([current?.firstSeenAt, device?.firstSeenAt]) ?? now,
      lastSeenAt: now,
    };
    const written = current ? await this.store.replaceProfile(profile) : await this.store.insertProfile(profile);
    // Tags and keys registered for this attempt stay registered: the retry most likely needs them, and
    // removing them could pull a registration from under another writer that started using it.
    if (!written) return fail("conflict");
    if (device) await this.store.deleteProfile(device);
    if (foldDeviceId !== null) {
      await this.store.linkDevice(
        projectId,
        foldDeviceId,
        { partnerUserId: partnerUserId!, platformUserId: profile.platformUserId },
        now,
      );
    }

    counts.add(
      tagCountDeltas([current?.tags ?? [], device?.tags ?? []], next.tags),
      [...(ops.tags ?? []), ...ops.tagsAdd].filter((tag) => next.tags.includes(tag)),
    );
    return ok(
      ok({
        profile: { ...profile, version: profile.version + 1 },
        dropped: inFieldOrder([...ops.dropped, ...droppedIncrements]),
      }),
    );
  }

  /**
   * Registers tags and trait keys new to the project, within its limits. The
   * slots are taken first with a guarded `$inc` on the project's counter
   * (atomic on MongoDB; serialised by the registry lock in this process), so
   * two writers can never both take the 500th tag. A tag or key keeps its slot
   * once registered, even when no player carries it any more: its record (id,
   * label, category) lives on, and only a studio could decide to retire it.
   */
  private async register(
    projectId: string,
    tags: string[],
    keys: string[],
    labels: ReadonlyMap<string, string>,
    now: Date,
  ): Promise<Result<void, RejectCode>> {
    const cachedTags = knownIn(this.knownTags, projectId);
    const cachedKeys = knownIn(this.knownKeys, projectId);
    const uncachedTags = tags.filter((tag) => !cachedTags.has(tag));
    const uncachedKeys = keys.filter((key) => !cachedKeys.has(key));
    for (const tag of await this.store.findRegisteredTags(projectId, uncachedTags)) cachedTags.add(tag);
    for (const key of await this.store.findRegisteredTraitKeys(projectId, uncachedKeys)) cachedKeys.add(key);
    const missingTags = uncachedTags.filter((tag) => !cachedTags.has(tag));
    const missingKeys = uncachedKeys.filter((key) => !cachedKeys.has(key));

    let firstTagId = 0;
    if (missingTags.length > 0) {
      const reserved = await this.store.reserveTagSlots(projectId, missingTags.length, MAX_TAGS_PER_PROJECT);
      if (reserved === null) return fail("project_tag_limit");
      firstTagId = reserved;
    }
    if (
      missingKeys.length > 0 &&
      !(await this.store.reserveTraitKeySlots(projectId, missingKeys.length, MAX_TRAIT_KEYS_PER_PROJECT))
    ) {
      await this.store.releaseSlots(projectId, missingTags.length, 0);
      return fail("project_trait_limit");
    }

    const labelled = missingTags.map((tag) => ({ tag, label: labels.get(tag) ?? tag }));
    const insertedTags = await this.store.insertTags(projectId, firstTagId, labelled, now);
    const insertedKeys = await this.store.insertTraitKeys(projectId, missingKeys, now);
    // Another process registered some of them first: give back the slots taken twice.
    await this.store.releaseSlots(
      projectId,
      missingTags.length - insertedTags.length,
      missingKeys.length - insertedKeys.length,
    );
    for (const tag of missingTags) cachedTags.add(tag);
    for (const key of missingKeys) cachedKeys.add(key);
    return ok(undefined);
  }

  /** A new partner profile starts linked when a launch of that player was verified before it existed. */
  private async platformUserOf(projectId: string, partnerUserId: string | null): Promise<string | null> {
    return partnerUserId === null ? null : this.store.findPlatformUser(projectId, partnerUserId);
  }

  private async applyCounts(projectId: string, counts: TagCountChanges): Promise<void> {
    if (counts.isEmpty()) return;
    await this.locks.run([registryLock(projectId)], () =>
      this.store.adjustTagCounts(projectId, counts.deltas, [...counts.given], this.clock.now()),
    );
  }
}

/** The profile an entry writes: the partner's, the device's owner's, or the device's own; null without identity. */
function targetOf(
  projectId: string,
  { partnerUserId, deviceId }: Identity,
  owners: ReadonlyMap<string, string>,
): Target | null {
  if (partnerUserId !== undefined) {
    return {
      projectId,
      identityKey: partnerKey(partnerUserId),
      partnerUserId,
      foldDeviceId: deviceId ?? null,
      deviceOnlyId: null,
    };
  }
  if (deviceId === undefined) return null;
  const owner = owners.get(deviceId);
  return owner
    ? { projectId, identityKey: partnerKey(owner), partnerUserId: owner, foldDeviceId: null, deviceOnlyId: null }
    : { projectId, identityKey: deviceKey(deviceId), partnerUserId: null, foldDeviceId: null, deviceOnlyId: deviceId };
}

function knownIn(cache: Map<string, Set<string>>, projectId: string): Set<string> {
  let known = cache.get(projectId);
  if (!known) cache.set(projectId, (known = new Set()));
  return known;
}

/** players_count changes of the entries of one call, applied together once they are written. */
class TagCountChanges {
  readonly deltas = new Map<string, number>();
  /** Tags players were given (their last_seen_at moves). */
  readonly given = new Set<string>();

  add(deltas: ReadonlyMap<string, number>, given: readonly string[]): void {
    for (const [tag, delta] of deltas) {
      const total = (this.deltas.get(tag) ?? 0) + delta;
      if (total === 0) this.deltas.delete(tag);
      else this.deltas.set(tag, total);
    }
    for (const tag of given) this.given.add(tag);
  }

  isEmpty(): boolean {
    return this.deltas.size === 0 && this.given.size === 0;
  }
}

function reject(code: RejectCode): EntryOutcome {
  return fail({ code, message: REJECT_MESSAGES[code] });
}

function earliest(dates: (Date | undefined)[]): Date | undefined {
  const present = dates.filter((date): date is Date => date !== undefined);
  return present.length === 0 ? undefined : new Date(Math.min(...present.map((date) => date.getTime())));
}

const profileLock = (projectId: string, identityKey: string) => `profile/${projectId}/${identityKey}`;
const registryLock = (projectId: string) => `registry/${projectId}`;
