import type { Db } from "mongodb";
import { SCOPES_BY_TYPE, type ApiKeyType, type Scope } from "./api-keys.js";

export interface ApiKeyRecord {
  keyId: string;
  type: ApiKeyType;
  scopes: Scope[];
  /** Null for platform and admin keys. */
  projectId: string | null;
  revokedAt: Date | null;
  hash: Buffer;
}

/** A key as listed: never its hash. */
export interface ListedApiKey extends Omit<ApiKeyRecord, "hash"> {
  createdAt: Date;
}

/**
 * Keyed by the key's SHA-256 (hex), so authentication, which runs on every
 * request, is an `_id` lookup: the one query FerretDB answers without
 * evaluating a filter on every document.
 */
interface ApiKeyDoc {
  _id: string;
  key_id: string;
  type: ApiKeyType;
  project_id: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

/** The id of the admin key that comes from PLATFORM_ADMIN_KEY (or was generated at first start). */
export const BOOTSTRAP_ADMIN_KEY_ID = "key_bootstrap_admin";

/** The `api_keys` collection. */
export class ApiKeyStore {
  private readonly apiKeys;

  constructor(db: Db) {
    this.apiKeys = db.collection<ApiKeyDoc>("api_keys");
  }

  async createIndexes(): Promise<void> {
    await this.apiKeys.createIndex({ key_id: 1 }, { unique: true });
  }

  async insertApiKey(key: Omit<ApiKeyRecord, "revokedAt">, now: Date): Promise<void> {
    await this.apiKeys.insertOne({
      _id: key.hash.toString("hex"),
      key_id: key.keyId,
      type: key.type,
      project_id: key.projectId,
      created_at: now,
      revoked_at: null,
    });
  }
  /** Stores `hash` as the bootstrap admin key, replacing an earlier one. */
  async setBootstrapAdminKey(hash: Buffer, now: Date): Promise<void> {
    const id = hash.toString("hex");
    await this.apiKeys.deleteMany({ key_id: BOOTSTRAP_ADMIN_KEY_ID, _id: { $ne: id } });
    await this.apiKeys.updateOne(
      { _id: id },
      {
        $set: { key_id: BOOTSTRAP_ADMIN_KEY_ID, type: "admin", project_id: null, revoked_at: null },
        $setOnInsert: { created_at: now },
      },
      { upsert: true },
    );
  }
  async hasBootstrapAdminKey(): Promise<boolean> {
    return (await this.apiKeys.countDocuments({ key_id: BOOTSTRAP_ADMIN_KEY_ID }, { limit: 1 })) > 0;
  }
  async findApiKeyByHash(hash: Buffer): Promise<ApiKeyRecord | null> {
    const doc = await this.apiKeys.findOne({ _id: hash.toString("hex") });
    return (
      doc && {
        keyId: doc.key_id,
        type: doc.type,
        scopes: [...SCOPES_BY_TYPE[doc.type]],
        projectId: doc.project_id,
        revokedAt: doc.revoked_at,
        hash: Buffer.from(doc._id, "hex"),
      }
    );
  }
  /** A page of the keys (every key, or a project's), oldest first, and how many there are. */
  async listApiKeys(
    projectId: string | undefined,
    skip: number,
    limit: number,
  ): Promise<{ keys: ListedApiKey[]; total: number }> {
    const filter = projectId === undefined ? {} : { project_id: projectId };
    const [docs, total] = await Promise.all([
      this.apiKeys.find(filter).sort({ created_at: 1, key_id: 1 }).skip(skip).limit(limit).toArray(),
      this.apiKeys.countDocuments(filter),
    ]);
    const keys = docs.map((doc) => ({
      keyId: doc.key_id,
      type: doc.type,
      scopes: [...SCOPES_BY_TYPE[doc.type]],
      projectId: doc.project_id,
      createdAt: doc.created_at,
      revokedAt: doc.revoked_at,
    }));
    return { keys, total };
  }
  /** Marks the key revoked; returns when it was revoked, or null for an unknown key. */
  async revokeApiKey(keyId: string, now: Date): Promise<Date | null> {
    await this.apiKeys.updateOne({ key_id: keyId, revoked_at: null }, { $set: { revoked_at: now } });
    const doc = await this.apiKeys.findOne({ key_id: keyId });
    return doc?.revoked_at ?? null;
  }
}
