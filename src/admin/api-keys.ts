import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Db } from "mongodb";
import type { Clock } from "../clock.js";

/*
 * API keys: what each type may do, the stored records (by hash only), and the cache every call authenticates
 * through.
 */

/** What an API key may do; each RPC declares the one it needs in the proto (platformapi.v1.required_scope). */
export type Scope = "launch:issue" | "launch:verify" | "events:write" | "events:read" | "players:manage" | "admin";

export type ApiKeyType = "private" | "public" | "reader" | "platform" | "admin";

export const API_KEY_TYPES: readonly ApiKeyType[] = ["private", "public", "reader", "platform", "admin"];

/**
 * What each key type may do. Read from here on every authentication (not from the stored key), so a key
 * created before a scope was added to its type holds it too.
 */
export const SCOPES_BY_TYPE: Readonly<Record<ApiKeyType, readonly Scope[]>> = {
  // The studio backend's key: the only one that can verify launch tokens or change what every client sees.
  private: ["launch:verify", "events:write", "events:read", "players:manage"],
  // Safe to ship in a game client: it can only write.
  public: ["events:write"],
  // Dashboards and BI tools: reads only, never a write.
  reader: ["events:read"],
  // The platform's launcher backend.
  platform: ["launch:issue"],
  admin: ["admin"],
};

/** Key types that belong to a project; the others are platform-wide. */
export function isProjectKeyType(type: ApiKeyType): boolean {
  return type === "private" || type === "public" || type === "reader";
}

// Prefixes make a leaked key recognisable to secret scanners and to people.
const PREFIX: Readonly<Record<ApiKeyType, string>> = {
  private: "sk_",
  public: "pk_",
  reader: "rk_",
  platform: "plk_",
  admin: "adm_",
};

export function isApiKeyType(value: string): value is ApiKeyType {
  return (API_KEY_TYPES as readonly string[]).includes(value);
}

/** A new random key (256 bits) and the id it is known by. */
export function generateApiKey(type: ApiKeyType): { keyId: string; key: string } {
  return {
    keyId: `key_${randomBytes(9).toString("base64url")}`,
    key: PREFIX[type] + randomBytes(32).toString("base64url"),
  };
}

/** The only form in which a key is stored. */
export function hashApiKey(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}

/** Constant-time comparison of a presented key's hash with a stored hash. */
export function apiKeyHashesMatch(presentedHash: Buffer, storedHash: Buffer): boolean {
  return presentedHash.length === storedHash.length && timingSafeEqual(presentedHash, storedHash);
}

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

  /** With `queryIndexes` (src/db/engine.ts), a project's keys are listed by an index, in the list's order. */
  async createIndexes(queryIndexes: boolean): Promise<void> {
    await this.apiKeys.createIndex({ key_id: 1 }, { unique: true });
    if (queryIndexes) await this.apiKeys.createIndex({ project_id: 1, created_at: 1, key_id: 1 });
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

export interface ApiKeyCacheOptions {
  store: ApiKeyStore;
  /** How long a lookup's answer, found or not, is reused; 0 reads the key every time. */
  ttlMs: number;
  clock: Clock;
  /** Unknown key hashes kept at most; the oldest is dropped first. */
  maxUnknownKeys?: number;
}

interface Entry {
  record: ApiKeyRecord;
  expiresAt: number;
}

/**
 * API key records by hash, kept for `ttlMs` so that most requests skip the
 * lookup, and concurrent lookups of one hash share one read. A key revoked
 * through this process is dropped at once; another instance refuses it
 * within `ttlMs`.
 *
 * Hashes of unknown keys are kept too, for the same time and bounded in
 * number, so a key presented again and again (an old key left in a client)
 * costs one lookup per ttl. Keys are random, so a key created after its hash
 * was found unknown is never one that someone was already presenting.
 */
export class ApiKeyCache {
  // The record last read for each stored key, kept past its ttl (see lastRead); there are only
  // as many as keys in the database.
  private readonly known = new Map<string, Entry>();
  // Insertion order is expiry order (one ttl for all), so expired entries are always at the front.
  private readonly unknown = new Map<string, number>();
  private readonly reads = new Map<string, Promise<ApiKeyRecord | null>>();
  /** Bumped by each revocation, so a lookup that raced one does not cache what it read before it. */
  private revocations = 0;

  constructor(private readonly options: ApiKeyCacheOptions) {}

  /** The record last read for `hash`, even past its ttl: whether the key was good, without a lookup. */
  lastRead(hash: Buffer): ApiKeyRecord | undefined {
    return this.known.get(hash.toString("hex"))?.record;
  }

  /**
   * The record for `hash`: cached while fresh, else read. `beforeRead` runs
   * (and may throw to refuse) only when this call is the one to start a read.
   */
  async findByHash(hash: Buffer, beforeRead?: () => void): Promise<ApiKeyRecord | null> {
    const id = hash.toString("hex");
    const now = this.now();
    const cached = this.known.get(id);
    if (cached && cached.expiresAt > now) return cached.record;
    if ((this.unknown.get(id) ?? 0) > now) return null;
    const inFlight = this.reads.get(id);
    if (inFlight) return inFlight;

    beforeRead?.();
    const read = this.read(hash, id, now).finally(() => {
      if (this.reads.get(id) === read) this.reads.delete(id);
    });
    this.reads.set(id, read);
    return read;
  }

  /** Drops the key with this id, after a revocation. */
  forget(keyId: string): void {
    this.revocations++;
    // A read in flight may have started before the revocation; later callers start their own.
    this.reads.clear();
    for (const [id, entry] of this.known) {
      if (entry.record.keyId === keyId) this.known.delete(id);
    }
  }

  private async read(hash: Buffer, id: string, now: number): Promise<ApiKeyRecord | null> {
    const { store, ttlMs, maxUnknownKeys = 10_000 } = this.options;
    const revocations = this.revocations;
    const record = await store.findApiKeyByHash(hash);
    this.known.delete(id);
    this.unknown.delete(id);
    if (record && revocations === this.revocations) {
      this.known.set(id, { record, expiresAt: now + ttlMs });
    } else if (!record && ttlMs > 0) {
      this.unknown.set(id, now + ttlMs);
      if (this.unknown.size > maxUnknownKeys) this.unknown.delete(this.unknown.keys().next().value!);
    }
    for (const [unknownId, expiresAt] of this.unknown) {
      if (expiresAt > now) break;
      this.unknown.delete(unknownId);
    }
    return record;
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }
}
