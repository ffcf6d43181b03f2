import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

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
