import {
  MongoBulkWriteError,
  type Collection,
  type Db,
  type Document,
  type Filter,
  type OptionalUnlessRequiredId,
} from "mongodb";
import { traitIndexEntry, type TraitValue } from "./normalise.js";
import { isDuplicateKey } from "../db/errors.js";
import { projectScopedId } from "../db/ids.js";

/** A stored player profile. `version` guards concurrent writers (compare-and-swap). */
export interface ProfileRecord {
  projectId: string;
  identityKey: string;
  partnerUserId: string | null;
  deviceId: string | null;
  platformUserId: string | null;
  tags: string[];
  traits: Map<string, TraitValue>;
  version: number;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

export interface TagRecord {
  id: number;
  tag: string;
  label: string;
  category: string | null;
  description: string | null;
  isHidden: boolean;
  playersCount: number;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

export interface TagMetadata {
  label?: string;
  category?: string | null;
  description?: string | null;
  isHidden?: boolean;
}

export interface ProfileQuery {
  tagsAny?: string[];
  tagsAll?: string[];
  /** traitIndexEntry() of each trait that must match. */
  traits?: string[];
}

interface ProfileDoc {
  _id: string;
  project_id: string;
  identity_key: string;
  partner_user_id: string | null;
  device_id: string | null;
  platform_user_id: string | null;
  linked: boolean;
  tags: string[];
  /** Keys are validated trait keys (no `.`, no leading `$` or `_`); written only as a whole document. */
  traits: Record<string, TraitValue>;
  /** traitIndexEntry(key, value) per trait: equality filters on traits use this multikey index. */
  trait_index: string[];
  version: number;
  first_seen_at: Date;
  last_seen_at: Date;
}

interface TagDoc {
  _id: string;
  project_id: string;
  id: number;
  tag: string;
  label: string;
  category: string | null;
  description: string | null;
  is_hidden: boolean;
  players_count: number;
  first_seen_at: Date;
  last_seen_at: Date;
}

interface TraitKeyDoc {
  _id: string;
  project_id: string;
  key: string;
  first_seen_at: Date;
}

/** Per project: how many tags and trait keys are registered, and the last tag id handed out. */
interface RegistryCounterDoc {
  _id: string;
  tag_count: number;
  trait_key_count: number;
  last_tag_id: number;
}

interface DeviceLinkDoc {
  _id: string;
  project_id: string;
  device_id: string;
  partner_user_id: string;
  /** The platform user of the profile the device was linked to, when that profile had one. */
  platform_user_id: string | null;
  linked_at: Date;
}

/** Whom a device is linked to. */
export interface DeviceLink {
  partnerUserId: string;
  platformUserId: string | null;
}

interface AccountLinkDoc {
  _id: string;
  project_id: string;
  partner_user_id: string;
  platform_user_id: string;
  linked_at: Date;
}

export const PLAYER_PROFILES = "player_profiles";
export const PLAYER_TAGS = "player_tags";

/** Storage of player profiles, the project tag and trait-key registries, and device/account links. */
export class PlayerStore {
  private readonly profiles;
  private readonly tags;
  private readonly traitKeys;
  private readonly counters;
  private readonly devices;
  private readonly accounts;

  /**
   * `isFerretDb`: FerretDB 1.24 does not apply an update's filter atomically
   * with its write (measured), so the version guard there buys nothing and costs
   * a slower replace; writes to a profile are serialised in-process instead.
   */
  constructor(
    db: Db,
    private readonly isFerretDb = false,
  ) {
    this.profiles = db.collection<ProfileDoc>(PLAYER_PROFILES);
    this.tags = db.collection<TagDoc>(PLAYER_TAGS);
    this.traitKeys = db.collection<TraitKeyDoc>("player_trait_keys");
    this.counters = db.collection<RegistryCounterDoc>("player_registry_counters");
    this.devices = db.collection<DeviceLinkDoc>("player_devices");
    this.accounts = db.collection<AccountLinkDoc>("player_accounts");
  }

  /** Every query is led by project_id, so each index starts with it. */
  async createIndexes(): Promise<void> {
    await this.profiles.createIndex({ project_id: 1, last_seen_at: -1, identity_key: 1 });
    await this.profiles.createIndex({ project_id: 1, tags: 1, last_seen_at: -1, identity_key: 1 });
    await this.profiles.createIndex({ project_id: 1, trait_index: 1 });
    await this.tags.createIndex({ project_id: 1, tag: 1 }, { unique: true });
    await this.tags.createIndex({ project_id: 1, id: 1 }, { unique: true });
    await this.tags.createIndex({ project_id: 1, category: 1 });
    await this.traitKeys.createIndex({ project_id: 1, key: 1 }, { unique: true });
  }

  // ---- profiles ----

  async findProfile(projectId: string, identityKey: string): Promise<ProfileRecord | null> {
    const doc = await this.profiles.findOne({ _id: projectScopedId(projectId, identityKey) });
    return doc && toProfile(doc);
  }

  /** Inserts a new profile (version 1); false when one with that identity appeared meanwhile. */
  async insertProfile(profile: ProfileRecord): Promise<boolean> {
    try {
      await this.profiles.insertOne(profileDocument({ ...profile, version: 1 }));
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /** Replaces the profile if it is still at `profile.version`; false when another writer got there first. */
  async replaceProfile(profile: ProfileRecord): Promise<boolean> {
    const { _id, ...doc } = profileDocument({ ...profile, version: profile.version + 1 });
    const result = await this.profiles.replaceOne(this.isFerretDb ? { _id } : { _id, version: profile.version }, doc);
    return result.matchedCount === 1;
  }

  async deleteProfile(profile: ProfileRecord): Promise<void> {
    await this.profiles.deleteOne({
      _id: projectScopedId(profile.projectId, profile.identityKey),
      version: profile.version,
    });
  }

  /** One page of the profiles matching `query`, newest last_seen_at first, and the number of matches. */
  async searchProfiles(
    projectId: string,
    query: ProfileQuery,
    skip: number,
    limit: number,
  ): Promise<{ profiles: ProfileRecord[]; total: number }> {
    const filter: Filter<ProfileDoc> = { project_id: projectId };
    if (query.tagsAny) filter.tags = { $in: query.tagsAny };
    if (query.tagsAll) filter.tags = { $all: query.tagsAll };
    if (query.traits) filter.trait_index = { $all: query.traits };
    const [docs, total] = await Promise.all([
      this.profiles.find(filter).sort({ last_seen_at: -1, identity_key: 1 }).skip(skip).limit(limit).toArray(),
      this.profiles.countDocuments(filter),
    ]);
    return { profiles: docs.map(toProfile), total };
  }

  // ---- device and account links ----

  /** Device id to the partner user it is linked to, for the linked ones among `deviceIds`. */
  async findDeviceOwners(projectId: string, deviceIds: readonly string[]): Promise<Map<string, string>> {
    if (deviceIds.length === 0) return new Map();
    const ids = [...new Set(deviceIds)].map((deviceId) => projectScopedId(projectId, deviceId));
    const docs = await this.devices.find(ids.length === 1 ? { _id: ids[0] } : { _id: { $in: ids } }).toArray();
    return new Map(docs.map((doc) => [doc.device_id, doc.partner_user_id]));
  }

  async findDeviceLink(projectId: string, deviceId: string): Promise<DeviceLink | null> {
    const doc = await this.devices.findOne({ _id: projectScopedId(projectId, deviceId) });
    return doc && { partnerUserId: doc.partner_user_id, platformUserId: doc.platform_user_id ?? null };
  }

  async linkDevice(projectId: string, deviceId: string, link: DeviceLink, now: Date): Promise<void> {
    await this.devices.updateOne(
      { _id: projectScopedId(projectId, deviceId) },
      {
        $set: {
          project_id: projectId,
          device_id: deviceId,
          partner_user_id: link.partnerUserId,
          platform_user_id: link.platformUserId,
          linked_at: now,
        },
      },
      { upsert: true },
    );
  }

  async findPlatformUser(projectId: string, partnerUserId: string): Promise<string | null> {
    const doc = await this.accounts.findOne({ _id: projectScopedId(projectId, partnerUserId) });
    return doc?.platform_user_id ?? null;
  }

  async linkAccount(projectId: string, partnerUserId: string, platformUserId: string, now: Date): Promise<void> {
    await this.accounts.updateOne(
      { _id: projectScopedId(projectId, partnerUserId) },
      {
        $set: {
          project_id: projectId,
          partner_user_id: partnerUserId,
          platform_user_id: platformUserId,
          linked_at: now,
        },
      },
      { upsert: true },
    );
  }

  // ---- project registries ----

  async findRegisteredTags(projectId: string, tags: readonly string[]): Promise<Set<string>> {
    if (tags.length === 0) return new Set();
    const docs = await this.tags
      .find({ project_id: projectId, tag: { $in: [...tags] } }, { projection: { tag: 1 } })
      .toArray();
    return new Set(docs.map((doc) => doc.tag));
  }

  async findRegisteredTraitKeys(projectId: string, keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const docs = await this.traitKeys
      .find({ project_id: projectId, key: { $in: [...keys] } }, { projection: { key: 1 } })
      .toArray();
    return new Set(docs.map((doc) => doc.key));
  }

  /**
   * Takes `n` tag slots of the project if that keeps it within `limit`; returns
   * the first of `n` fresh tag ids, or null when the limit would be broken. The
   * count guard sits in the filter of one update, which MongoDB applies atomically.
   */
  async reserveTagSlots(projectId: string, n: number, limit: number): Promise<number | null> {
    await this.ensureCounter(projectId);
    const doc = await this.counters.findOneAndUpdate(
      { _id: projectId, tag_count: { $lte: limit - n } },
      { $inc: { tag_count: n, last_tag_id: n } },
      { returnDocument: "after" },
    );
    return doc ? doc.last_tag_id - n + 1 : null;
  }

  async reserveTraitKeySlots(projectId: string, n: number, limit: number): Promise<boolean> {
    await this.ensureCounter(projectId);
    const result = await this.counters.updateOne(
      { _id: projectId, trait_key_count: { $lte: limit - n } },
      { $inc: { trait_key_count: n } },
    );
    return result.modifiedCount === 1;
  }

  async releaseSlots(projectId: string, tags: number, traitKeys: number): Promise<void> {
    if (tags === 0 && traitKeys === 0) return;
    await this.counters.updateOne({ _id: projectId }, { $inc: { tag_count: -tags, trait_key_count: -traitKeys } });
  }

  /**
   * Registers tags with ids from `firstId` on; returns those inserted. A tag
   * missing from the answer was registered meanwhile by another writer, and
   * its slot must be given back.
   */
  async insertTags(
    projectId: string,
    firstId: number,
    tags: readonly { tag: string; label: string }[],
    now: Date,
  ): Promise<string[]> {
    const docs = tags.map(({ tag, label }, i) =>
      tagDocument(projectId, {
        id: firstId + i,
        tag,
        label,
        category: null,
        description: null,
        isHidden: false,
        playersCount: 0,
        firstSeenAt: now,
        lastSeenAt: now,
      }),
    );
    const failed = await insertAllNew(this.tags, docs);
    return tags.filter((_, i) => !failed.has(i)).map(({ tag }) => tag);
  }

  async insertTraitKeys(projectId: string, keys: readonly string[], now: Date): Promise<string[]> {
    const docs: TraitKeyDoc[] = keys.map((key) => ({
      _id: projectScopedId(projectId, key),
      project_id: projectId,
      key,
      first_seen_at: now,
    }));
    const failed = await insertAllNew(this.traitKeys, docs);
    return keys.filter((_, i) => !failed.has(i));
  }

  /** Applies players_count changes (with `$inc`, never by counting profiles) and stamps tags players were given. */
  async adjustTagCounts(
    projectId: string,
    deltas: ReadonlyMap<string, number>,
    given: readonly string[],
    now: Date,
  ): Promise<void> {
    const byDelta = new Map<number, string[]>();
    for (const [tag, delta] of deltas) byDelta.set(delta, [...(byDelta.get(delta) ?? []), tag]);
    for (const [delta, tags] of byDelta) {
      await this.tags.updateMany(
        { project_id: projectId, tag: { $in: tags } },
        delta > 0
          ? { $inc: { players_count: delta }, $set: { last_seen_at: now } }
          : { $inc: { players_count: delta } },
      );
    }
    const stampOnly = given.filter((tag) => !((deltas.get(tag) ?? 0) > 0));
    if (stampOnly.length > 0) {
      await this.tags.updateMany({ project_id: projectId, tag: { $in: stampOnly } }, { $set: { last_seen_at: now } });
    }
  }

  private async ensureCounter(projectId: string): Promise<void> {
    try {
      await this.counters.updateOne(
        { _id: projectId },
        { $setOnInsert: { tag_count: 0, trait_key_count: 0, last_tag_id: 0 } },
        { upsert: true },
      );
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  // ---- tag listing ----

  async findTag(projectId: string, tag: string): Promise<TagRecord | null> {
    const doc = await this.tags.findOne({ _id: projectScopedId(projectId, tag) });
    return doc && toTag(doc);
  }

  /** `textPattern` is an already escaped regular expression, matched case-insensitively against tag and label. */
  async listTags(
    projectId: string,
    query: { textPattern?: string; category?: string | null },
    skip: number,
    limit: number,
  ): Promise<{ tags: TagRecord[]; total: number }> {
    const filter: Filter<TagDoc> = { project_id: projectId };
    if (query.category !== undefined) filter.category = query.category;
    if (query.textPattern !== undefined) {
      const match = { $regex: query.textPattern, $options: "i" };
      filter.$or = [{ tag: match }, { label: match }];
    }
    const [docs, total] = await Promise.all([
      this.tags.find(filter).sort({ id: 1 }).skip(skip).limit(limit).toArray(),
      this.tags.countDocuments(filter),
    ]);
    return { tags: docs.map(toTag), total };
  }

  async categories(projectId: string): Promise<string[]> {
    const values = await this.tags.distinct("category", { project_id: projectId });
    return values.filter((value): value is string => typeof value === "string").sort();
  }

  async updateTagMetadata(projectId: string, tag: string, metadata: TagMetadata): Promise<TagRecord | null> {
    const set: Partial<TagDoc> = {};
    if (metadata.label !== undefined) set.label = metadata.label;
    if (metadata.category !== undefined) set.category = metadata.category;
    if (metadata.description !== undefined) set.description = metadata.description;
    if (metadata.isHidden !== undefined) set.is_hidden = metadata.isHidden;
    if (Object.keys(set).length > 0) await this.tags.updateOne({ _id: projectScopedId(projectId, tag) }, { $set: set });
    return this.findTag(projectId, tag);
  }
}

/** Inserts every document it can; returns the indexes of those refused as duplicates. */
async function insertAllNew<T extends Document & { _id: string }>(
  collection: Collection<T>,
  docs: T[],
): Promise<Set<number>> {
  if (docs.length === 0) return new Set();
  try {
    await collection.insertMany(docs as OptionalUnlessRequiredId<T>[], { ordered: false });
    return new Set();
  } catch (error) {
    if (!(error instanceof MongoBulkWriteError) || !isDuplicateKey(error)) throw error;
    const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    return new Set(errors.map((e) => e.index));
  }
}

/** The stored shape of a profile (bulk loaders such as the benchmark write exactly this). */
export function profileDocument(profile: ProfileRecord): ProfileDoc {
  return {
    _id: projectScopedId(profile.projectId, profile.identityKey),
    project_id: profile.projectId,
    identity_key: profile.identityKey,
    partner_user_id: profile.partnerUserId,
    device_id: profile.deviceId,
    platform_user_id: profile.platformUserId,
    linked: profile.platformUserId !== null,
    tags: profile.tags,
    traits: Object.fromEntries(profile.traits),
    trait_index: [...profile.traits].map(([key, value]) => traitIndexEntry(key, value)),
    version: profile.version,
    first_seen_at: profile.firstSeenAt,
    last_seen_at: profile.lastSeenAt,
  };
}

/** The stored shape of a tag record. */
export function tagDocument(projectId: string, tag: TagRecord): TagDoc {
  return {
    _id: projectScopedId(projectId, tag.tag),
    project_id: projectId,
    id: tag.id,
    tag: tag.tag,
    label: tag.label,
    category: tag.category,
    description: tag.description,
    is_hidden: tag.isHidden,
    players_count: tag.playersCount,
    first_seen_at: tag.firstSeenAt,
    last_seen_at: tag.lastSeenAt,
  };
}

function toProfile(doc: ProfileDoc): ProfileRecord {
  return {
    projectId: doc.project_id,
    identityKey: doc.identity_key,
    partnerUserId: doc.partner_user_id,
    deviceId: doc.device_id,
    platformUserId: doc.platform_user_id,
    tags: doc.tags,
    traits: new Map(Object.entries(doc.traits)),
    version: doc.version,
    firstSeenAt: doc.first_seen_at,
    lastSeenAt: doc.last_seen_at,
  };
}

function toTag(doc: TagDoc): TagRecord {
  return {
    id: doc.id,
    tag: doc.tag,
    label: doc.label,
    category: doc.category,
    description: doc.description,
    isHidden: doc.is_hidden,
    playersCount: doc.players_count,
    firstSeenAt: doc.first_seen_at,
    lastSeenAt: doc.last_seen_at,
  };
}
