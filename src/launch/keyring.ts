import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { calculateJwkThumbprint, exportJWK } from "jose";
import type { Clock } from "../clock.js";
import type { LaunchStore, SigningKeyRecord } from "./store.js";

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
// Clocks of instances and of the launcher may disagree by this much.
const CLOCK_SKEW_MS = 60_000;
// Signing reloads keys older than this: another instance's rotation takes over well within the skew allowed.
const SIGNING_RELOAD_MS = 30_000;

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
  /** Oldest first: the keys that may still verify, the newest of them signing. */
  private keys: SigningKey[] = [];
  private loadedAt = 0;

  constructor(private readonly options: KeyringOptions) {}

  /** Loads the keys, creating the first one on a new database. */
  async start(): Promise<void> {
    await this.reload();
    if (this.keys.length === 0) await this.rotate();
  }

  /**
   * Creates a key that signs from now on and deletes the retired ones, so a
   * rotation costs the same after any number of rotations before it.
   */
  async rotate(): Promise<SigningKey> {
    const { privateKey } = generateKeyPairSync("ed25519");
    const createdAt = this.options.clock.now();
    const key = await toSigningKey(privateKey, createdAt);
    await this.options.store.insertSigningKey({
      kid: key.kid,
      privateKeyPem: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
      createdAt,
    });
    this.keys = sortByAge([...this.keys, key]);
    this.retire();
    const oldest = this.keys[0]!;
    // Every key older than one created before the cutoff had its successor by then: none can verify.
    if (oldest.createdAt.getTime() <= this.retirementCutoff()) {
      await this.options.store.deleteSigningKeysCreatedBefore(oldest.createdAt);
    }
    return key;
  }

  /**
   * The newest key. Keys read more than SIGNING_RELOAD_MS ago are read again
   * first, so a key another instance replaced stops signing here long before
   * it retires (its successor's age plus a token lifetime and the skew).
   */
  async signingKey(): Promise<SigningKey> {
    if (this.options.clock.now().getTime() - this.loadedAt > SIGNING_RELOAD_MS) await this.reload();
    const newest = this.keys.at(-1);
    if (!newest) throw new Error("keyring not started");
    return newest;
  }

  /** The key with this kid while it may still verify, reloading once in a while for keys made elsewhere. */
  async verificationKey(kid: string): Promise<SigningKey | undefined> {
    this.retire();
    let key = this.keys.find((k) => k.kid === kid);
    if (!key && this.options.clock.now().getTime() - this.loadedAt > RELOAD_INTERVAL_MS) {
      await this.reload();
      key = this.keys.find((k) => k.kid === kid);
    }
    return key;
  }

  /** Keys that may still verify a token, for the JWKS. */
  verificationKeys(): SigningKey[] {
    this.retire();
    return this.keys;
  }

  /** A key's tokens have all expired once its successor is older than this (a token lifetime and the skew). */
  private retirementCutoff(): number {
    return this.options.clock.now().getTime() - this.options.tokenTtlMs - CLOCK_SKEW_MS;
  }

  /** Forgets the keys whose successor started signing before the cutoff. */
  private retire(): void {
    const cutoff = this.retirementCutoff();
    let first = 0;
    while (first + 1 < this.keys.length && this.keys[first + 1]!.createdAt.getTime() <= cutoff) first++;
    if (first > 0) this.keys = this.keys.slice(first);
  }

  private async reload(): Promise<void> {
    const known = new Map(this.keys.map((key) => [key.kid, key]));
    const records = await this.options.store.listSigningKeys();
    // Keys already in memory are reused: only a key made elsewhere is parsed.
    this.keys = await Promise.all(records.map((record) => known.get(record.kid) ?? fromRecord(record)));
    this.loadedAt = this.options.clock.now().getTime();
    this.retire();
  }
}

function sortByAge(keys: SigningKey[]): SigningKey[] {
  return keys.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}

function fromRecord(record: SigningKeyRecord): Promise<SigningKey> {
  return toSigningKey(createPrivateKey(record.privateKeyPem), record.createdAt);
}

async function toSigningKey(privateKey: KeyObject, createdAt: Date): Promise<SigningKey> {
  const publicKey = createPublicKey(privateKey);
  const jwk = await exportJWK(publicKey);
  return { kid: await calculateJwkThumbprint(jwk), privateKey, publicKey, createdAt, x: jwk.x! };
}
