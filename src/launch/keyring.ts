import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { calculateJwkThumbprint, exportJWK } from "jose";
import type { Clock } from "../clock.js";
import type { LaunchStore } from "./store.js";

export interface SigningKey {
  /** RFC 7638 thumbprint of the public key; the `kid` of every token it signs. */
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  createdAt: Date;
  /** Base64url public key, for the JWKS. */
  x: string;
}

// An unknown kid reloads the keys (another instance may have rotated), at most this often.
const RELOAD_INTERVAL_MS = 5_000;

/**
 * The Ed25519 keys that sign and verify launch tokens, cached in memory so a
 * verify never reads them from the database. The newest key signs; an older
 * key keeps verifying until every token it can have signed has expired.
 */
export interface KeyringOptions {
  store: LaunchStore;
  /** Lifetime of a launch token: how long a replaced key keeps verifying. */
  tokenTtlMs: number;
  clock: Clock;
}

export class Keyring {
  private keys: SigningKey[] = [];
  private loadedAt = 0;

  constructor(private readonly options: KeyringOptions) {}

  /** Loads the keys, creating the first one on a new database. */
  async start(): Promise<void> {
    await this.reload();
    if (this.keys.length === 0) await this.rotate();
  }

  /** Creates a key that signs from now on. */
  async rotate(): Promise<SigningKey> {
    const { privateKey } = generateKeyPairSync("ed25519");
    const createdAt = this.options.clock.now();
    const key = await toSigningKey(privateKey, createdAt);
    await this.options.store.insertSigningKey({
      kid: key.kid,
      privateKeyPem: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
      createdAt,
    });
    await this.reload();
    return key;
  }

  signingKey(): SigningKey {
    const newest = this.keys.at(-1);
    if (!newest) throw new Error("keyring not started");
    return newest;
  }

  /** The key with this kid while it may still verify, reloading once in a while for keys made elsewhere. */
  async verificationKey(kid: string): Promise<SigningKey | undefined> {
    let key = this.keys.find((k) => k.kid === kid);
    if (!key && this.options.clock.now().getTime() - this.loadedAt > RELOAD_INTERVAL_MS) {
      await this.reload();
      key = this.keys.find((k) => k.kid === kid);
    }
    return key && this.canVerify(key) ? key : undefined;
  }

  /** Keys that may still verify a token, for the JWKS. */
  verificationKeys(): SigningKey[] {
    return this.keys.filter((key) => this.canVerify(key));
  }

  /** A key retires one token lifetime (plus a minute of clock skew) after its successor started signing. */
  private canVerify(key: SigningKey): boolean {
    const successor = this.keys.find((k) => k.createdAt > key.createdAt);
    return (
      !successor ||
      this.options.clock.now().getTime() < successor.createdAt.getTime() + this.options.tokenTtlMs + 60_000
    );
  }

  private async reload(): Promise<void> {
    const records = await this.options.store.listSigningKeys();
    this.keys = await Promise.all(records.map((r) => toSigningKey(createPrivateKey(r.privateKeyPem), r.createdAt)));
    this.loadedAt = this.options.clock.now().getTime();
  }
}

async function toSigningKey(privateKey: KeyObject, createdAt: Date): Promise<SigningKey> {
  const publicKey = createPublicKey(privateKey);
  const jwk = await exportJWK(publicKey);
  return { kid: await calculateJwkThumbprint(jwk), privateKey, publicKey, createdAt, x: jwk.x! };
}
