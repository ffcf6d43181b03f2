import type { Db } from "mongodb";
import { isDuplicateKey } from "../db/errors.js";
import type { ApiKeyType, Scope } from "./api-keys.js";

export interface ProjectRecord {
  projectId: string;
  name: string;
  gameId: number;
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

export interface EntitlementRecord {
  platformUserId: string;
  gameId: number;
  owns: boolean;
  source: string;
  channelId: string;
  buildVersion: string;
  updatedAt: Date;
}

interface ProjectDoc {
  _id: string;
  name: string;
  game_id: number;
  created_at: Date;
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
  scopes: Scope[];
  project_id: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

interface EntitlementDoc {
  _id: string;
  platform_user_id: string;
  game_id: number;
  owns: boolean;
  source: string;
  channel_id: string;
  build_version: string;
  updated_at: Date;
}

/** The id of the admin key that comes from PLATFORM_ADMIN_KEY (or was generated at first start). */
export const BOOTSTRAP_ADMIN_KEY_ID = "key_bootstrap_admin";

export class DuplicateGameError extends Error {}

/** Storage of projects, API keys and entitlements. */
export class AdminStore {
  private readonly projects;
  private readonly apiKeys;
  private readonly entitlements;

  constructor(db: Db) {
    this.projects = db.collection<ProjectDoc>("projects");
    this.apiKeys = db.collection<ApiKeyDoc>("api_keys");
    this.entitlements = db.collection<EntitlementDoc>("entitlements");
  }

  async createIndexes(): Promise<void> {
    await this.projects.createIndex({ game_id: 1 }, { unique: true });
    await this.apiKeys.createIndex({ key_id: 1 }, { unique: true });
    await this.entitlements.createIndex({ platform_user_id: 1, game_id: 1 }, { unique: true });
  }

  /** Throws DuplicateGameError when the game already belongs to a project. */
  async insertProject(project: ProjectRecord, now: Date): Promise<void> {
    try {
      await this.projects.insertOne({
        _id: project.projectId,
        name: project.name,
        game_id: project.gameId,
        created_at: now,
      });
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateGameError();
      throw error;
    }
  }

  async findProject(projectId: string): Promise<ProjectRecord | null> {
    const doc = await this.projects.findOne({ _id: projectId });
    return doc && { projectId: doc._id, name: doc.name, gameId: doc.game_id };
  }

  async findProjectByGame(gameId: number): Promise<ProjectRecord | null> {
    const doc = await this.projects.findOne({ game_id: gameId });
    return doc && { projectId: doc._id, name: doc.name, gameId: doc.game_id };
  }

  async insertApiKey(key: Omit<ApiKeyRecord, "revokedAt">, now: Date): Promise<void> {
    await this.apiKeys.insertOne({
      _id: key.hash.toString("hex"),
      key_id: key.keyId,
      type: key.type,
      scopes: key.scopes,
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
        $set: { key_id: BOOTSTRAP_ADMIN_KEY_ID, type: "admin", scopes: ["admin"], project_id: null, revoked_at: null },
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
        scopes: doc.scopes,
        projectId: doc.project_id,
        revokedAt: doc.revoked_at,
        hash: Buffer.from(doc._id, "hex"),
      }
    );
  }

  /** Marks the key revoked; returns when it was revoked, or null for an unknown key. */
  async revokeApiKey(keyId: string, now: Date): Promise<Date | null> {
    await this.apiKeys.updateOne({ key_id: keyId, revoked_at: null }, { $set: { revoked_at: now } });
    const doc = await this.apiKeys.findOne({ key_id: keyId });
    return doc?.revoked_at ?? null;
  }

  async upsertEntitlement(entitlement: EntitlementRecord): Promise<void> {
    await this.entitlements.updateOne(
      { _id: `${entitlement.platformUserId}:${entitlement.gameId}` },
      {
        $set: {
          platform_user_id: entitlement.platformUserId,
          game_id: entitlement.gameId,
          owns: entitlement.owns,
          source: entitlement.source,
          channel_id: entitlement.channelId,
          build_version: entitlement.buildVersion,
          updated_at: entitlement.updatedAt,
        },
      },
      { upsert: true },
    );
  }

  async findEntitlement(platformUserId: string, gameId: number): Promise<EntitlementRecord | null> {
    const doc = await this.entitlements.findOne({ _id: `${platformUserId}:${gameId}` });
    return (
      doc && {
        platformUserId: doc.platform_user_id,
        gameId: doc.game_id,
        owns: doc.owns,
        source: doc.source,
        channelId: doc.channel_id,
        buildVersion: doc.build_version,
        updatedAt: doc.updated_at,
      }
    );
  }
}
