import type { Db } from "mongodb";

/**
 * What the service keeps of an issued token: that it issued it, to which
 * project, until when. Everything else a verify needs is in the signed claims.
 */
export interface IssuedToken {
  jti: string;
  projectId: string;
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
  issued_at: Date;
  expires_at: Date;
}

/** One per issued token not yet verified; verify spends the token by deleting it. */
interface UnspentTokenDoc {
  _id: string;
  expires_at: Date;
}

interface SigningKeyDoc {
  _id: string;
  private_key_pem: string;
  created_at: Date;
}

/**
 * Storage of launch tokens, their single use, and signing keys.
 *
 * An issued token has two documents under its `jti`: one in `launch_tokens`,
 * the record that the service issued it, and one in `launch_tokens_unspent`,
 * which verify deletes. A delete by `_id` removes the document for exactly one
 * caller on MongoDB and on FerretDB alike, so the spend is one atomic write;
 * only a failed spend reads the record, to tell `already_used` from `unknown_token`.
 */
export class LaunchStore {
  private readonly tokens;
  private readonly unspent;
  private readonly signingKeys;

  constructor(db: Db) {
    this.tokens = db.collection<TokenDoc>("launch_tokens");
    this.unspent = db.collection<UnspentTokenDoc>("launch_tokens_unspent");
    this.signingKeys = db.collection<SigningKeyDoc>("signing_keys");
  }

  /**
   * With `ttl`, token documents are removed by MongoDB's TTL monitor; without
   * (FerretDB lacks TTL indexes) by `deleteExpiredTokens`, which the service
   * runs periodically. Either way validity is decided by `exp`, not by removal.
   */
  async createIndexes({ ttl }: { ttl: boolean }): Promise<void> {
    for (const collection of [this.tokens, this.unspent]) {
      await collection.createIndex({ expires_at: 1 }, ttl ? { expireAfterSeconds: 0 } : {});
    }
    await this.signingKeys.createIndex({ created_at: 1 });
  }

  async insertToken(token: IssuedToken): Promise<void> {
    const unspent = this.unspent.insertOne({ _id: token.jti, expires_at: token.expiresAt });
    const issued = this.tokens.insertOne({
      _id: token.jti,
      project_id: token.projectId,
      issued_at: token.issuedAt,
      expires_at: token.expiresAt,
    });
    await Promise.all([unspent, issued]);
  }

  /**
   * Whether the service issued this token to `projectId`.
   * The filter is `_id` alone because FerretDB evaluates any other condition document by document.
   */
  async isIssued(jti: string, projectId: string): Promise<boolean> {
    const doc = await this.tokens.findOne({ _id: jti }, { projection: { project_id: 1 } });
    return doc?.project_id === projectId;
  }

  /** True for exactly one caller per issued token: the one whose delete removed its unspent document. */
  async spendToken(jti: string): Promise<boolean> {
    return (await this.unspent.deleteOne({ _id: jti })).deletedCount === 1;
  }

  /** Whether the token is still unspent (its marker is only removed by a spend, or after its expiry). */
  async isUnspent(jti: string): Promise<boolean> {
    return (await this.unspent.findOne({ _id: jti }, { projection: { _id: 1 } })) !== null;
  }

  async deleteExpiredTokens(now: Date): Promise<void> {
    await this.tokens.deleteMany({ expires_at: { $lt: now } });
    await this.unspent.deleteMany({ expires_at: { $lt: now } });
  }

  async insertSigningKey(key: SigningKeyRecord): Promise<void> {
    await this.signingKeys.insertOne({ _id: key.kid, private_key_pem: key.privateKeyPem, created_at: key.createdAt });
  }

  /** Deletes the keys created before `createdAt`: they can no longer verify any token. */
  async deleteSigningKeysCreatedBefore(createdAt: Date): Promise<void> {
    await this.signingKeys.deleteMany({ created_at: { $lt: createdAt } });
  }

  /** Every signing key, oldest first. */
  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    const docs = await this.signingKeys.find().sort({ created_at: 1 }).toArray();
    return docs.map((doc) => ({ kid: doc._id, privateKeyPem: doc.private_key_pem, createdAt: doc.created_at }));
  }
}
