import { MongoServerError, type Db } from "mongodb";
import { projectScopedId } from "../db/ids.js";

/** What the service remembers of an issued token, keyed by its `jti`. */
export interface IssuedToken {
  jti: string;
  projectId: string;
  platformUserId: string;
  installationId: string;
  gameId: number;
  channelId: string;
  buildVersion: string;
  issuedAt: Date;
  expiresAt: Date;
}

export interface SigningKeyRecord {
  kid: string;
  /** PKCS#8 PEM. Never leaves the server, never logged. */
  privateKeyPem: string;
  createdAt: Date;
}

interface TokenDoc {
  _id: string;
  project_id: string;
  platform_user_id: string;
  installation_id: string;
  game_id: number;
  channel_id: string;
  build_version: string;
  issued_at: Date;
  expires_at: Date;
}

/** One per verified token: its `_id` is the token id, so a second insert fails however close the race. */
interface TokenUseDoc {
  _id: string;
  project_id: string;
  consumed_at: Date;
  expires_at: Date;
}

interface SigningKeyDoc {
  _id: string;
  private_key_pem: string;
  created_at: Date;
}

interface PartnerLinkDoc {
  _id: string;
  project_id: string;
  platform_user_id: string;
  partner_user_id: string;
  linked_at: Date;
}

/** Storage of launch tokens, their single use, signing keys, and partner id links. */
export class LaunchStore {
  private readonly tokens;
  private readonly uses;
  private readonly signingKeys;
  private readonly partnerLinks;

  constructor(db: Db) {
    this.tokens = db.collection<TokenDoc>("launch_tokens");
    this.uses = db.collection<TokenUseDoc>("launch_token_uses");
    this.signingKeys = db.collection<SigningKeyDoc>("signing_keys");
    this.partnerLinks = db.collection<PartnerLinkDoc>("partner_links");
  }

  /**
   * With `ttl`, token documents are removed by MongoDB's TTL monitor; without
   * (FerretDB lacks TTL indexes) by `deleteExpiredTokens`, which the service
   * runs periodically. Either way validity is decided by `exp`, not by removal.
   */
  async createIndexes({ ttl }: { ttl: boolean }): Promise<void> {
    for (const collection of [this.tokens, this.uses]) {
      await collection.createIndex({ expires_at: 1 }, ttl ? { expireAfterSeconds: 0 } : {});
    }
    await this.signingKeys.createIndex({ created_at: 1 });
  }

  async insertToken(token: IssuedToken): Promise<void> {
    await this.tokens.insertOne({
      _id: token.jti,
      project_id: token.projectId,
      platform_user_id: token.platformUserId,
      installation_id: token.installationId,
      game_id: token.gameId,
      channel_id: token.channelId,
      build_version: token.buildVersion,
      issued_at: token.issuedAt,
      expires_at: token.expiresAt,
    });
  }

  /**
   * The token as issued to `projectId`, or null when the service never issued it to that project.
   * The filter is `_id` alone because FerretDB evaluates any other condition document by document.
   */
  async findToken(jti: string, projectId: string): Promise<IssuedToken | null> {
    const doc = await this.tokens.findOne({ _id: jti });
    if (!doc || doc.project_id !== projectId) return null;
    return {
      jti: doc._id,
      projectId: doc.project_id,
      platformUserId: doc.platform_user_id,
      installationId: doc.installation_id,
      gameId: doc.game_id,
      channelId: doc.channel_id,
      buildVersion: doc.build_version,
      issuedAt: doc.issued_at,
      expiresAt: doc.expires_at,
    };
  }

  /**
   * Marks the token used. True for exactly one caller per token: the write is
   * an insert on the unique `_id`, which both MongoDB and FerretDB enforce
   * atomically, unlike a conditional update that FerretDB 1.x does not isolate.
   */
  async consumeToken(token: IssuedToken, now: Date): Promise<boolean> {
    try {
      await this.uses.insertOne({
        _id: token.jti,
        project_id: token.projectId,
        consumed_at: now,
        expires_at: token.expiresAt,
      });
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 11000) return false;
      throw error;
    }
  }

  async deleteExpiredTokens(now: Date): Promise<void> {
    await this.tokens.deleteMany({ expires_at: { $lt: now } });
    await this.uses.deleteMany({ expires_at: { $lt: now } });
  }

  async insertSigningKey(key: SigningKeyRecord): Promise<void> {
    await this.signingKeys.insertOne({ _id: key.kid, private_key_pem: key.privateKeyPem, created_at: key.createdAt });
  }

  /** Every signing key, oldest first. */
  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    const docs = await this.signingKeys.find().sort({ created_at: 1 }).toArray();
    return docs.map((doc) => ({ kid: doc._id, privateKeyPem: doc.private_key_pem, createdAt: doc.created_at }));
  }

  async setPartnerLink(projectId: string, platformUserId: string, partnerUserId: string, now: Date): Promise<void> {
    await this.partnerLinks.updateOne(
      { _id: projectScopedId(projectId, platformUserId) },
      {
        $set: { project_id: projectId, platform_user_id: platformUserId, partner_user_id: partnerUserId, linked_at: now },
      },
      { upsert: true },
    );
  }

  async findPartnerLink(projectId: string, platformUserId: string): Promise<string | null> {
    const doc = await this.partnerLinks.findOne({ _id: projectScopedId(projectId, platformUserId) });
    return doc?.partner_user_id ?? null;
  }
}
