import type { Db, Filter } from "mongodb";
import { isDuplicateKey } from "../db/errors.js";
import { projectScopedId } from "../db/ids.js";
import { traitIndexEntry, type TraitValue } from "./normalise.js";

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

export interface ProfileQuery {
  tagsAny?: string[];
  tagsAll?: string[];
  /** traitIndexEntry() of each trait that must match. */
  traits?: string[];
}

export interface ProfileDoc {
  _id: string;
  project_id: string;
  identity_key: string;
  partner_user_id: string | null;
  device_id: string | null;
  platform_user_id: string | null;
  tags: string[];
  /** Keys are validated trait keys (no `.`, no leading `$` or `_`); written only as a whole document. */
  traits: Record<string, TraitValue>;
  /** traitIndexEntry(key, value) per trait: equality filters on traits match this array. */
  trait_index: string[];
  version: number;
  first_seen_at: Date;
  last_seen_at: Date;
}

export const PLAYER_PROFILES = "player_profiles";

/** The player_profiles collection: one document per player and project, `_id` `<project>/<identity_key>`. */
export class ProfileStore {
  private readonly profiles;

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
  }

  async createIndexes(): Promise<void> {
    await this.profiles.createIndex({ project_id: 1, last_seen_at: -1, identity_key: 1 });
    await this.profiles.createIndex({ project_id: 1, tags: 1, last_seen_at: -1, identity_key: 1 });
    await this.profiles.createIndex({ project_id: 1, trait_index: 1 });
  }

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
    tags: profile.tags,
    traits: Object.fromEntries(profile.traits),
    trait_index: [...profile.traits].map(([key, value]) => traitIndexEntry(key, value)),
    version: profile.version,
    first_seen_at: profile.firstSeenAt,
    last_seen_at: profile.lastSeenAt,
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
