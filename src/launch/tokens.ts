import { randomUUID } from "node:crypto";
import { SignJWT, errors, jwtVerify } from "jose";
import { fail, ok, type Result } from "../errors.js";
import type { Keyring } from "./keyring.js";

/** The claims of a launch token: the registered JWT claims plus the launch they prove. */
export interface LaunchClaims {
  jti: string;
  /** The platform user. */
  sub: string;
  /** The project id. */
  aud: string;
  iat: number;
  exp: number;
  installation_id: string;
  game_id: number;
  channel_id: string;
  build_version: string;
}

export type ReadResult = Result<LaunchClaims, "invalid_token" | "expired">;

// Tokens are ~600 bytes; anything far larger is not one of ours and is not worth parsing.
const MAX_TOKEN_LENGTH = 4096;

export function newTokenId(): string {
  return randomUUID();
}

export async function signLaunchToken(claims: LaunchClaims, keyring: Keyring, issuer: string): Promise<string> {
  const key = await keyring.signingKey();
  const { jti, sub, aud, iat, exp, ...custom } = claims;
  return new SignJWT(custom)
    .setProtectedHeader({ alg: "EdDSA", typ: "JWT", kid: key.kid })
    .setIssuer(issuer)
    .setSubject(sub)
    .setAudience(aud)
    .setJti(jti)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(key.privateKey);
}

/**
 * Checks signature, algorithm, key and claims, in that order: anything
 * unparseable, unsigned, signed otherwise than EdDSA, or signed by a key we do
 * not hold is `invalid_token`; a well-signed token past `exp` is `expired`.
 */
export async function checkLaunchToken(
  token: string,
  keyring: Keyring,
  issuer: string,
  now: Date,
): Promise<ReadResult> {
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return fail("invalid_token");
  try {
    const { payload } = await jwtVerify(
      token,
      async ({ kid }) => {
        const key = kid === undefined ? undefined : await keyring.verificationKey(kid);
        if (!key) throw new errors.JWKSNoMatchingKey();
        return key.publicKey;
      },
      {
        algorithms: ["EdDSA"],
        typ: "JWT",
        issuer,
        currentDate: now,
        clockTolerance: 0,
        requiredClaims: ["jti", "sub", "aud", "iat", "exp"],
      },
    );
    if (!isLaunchClaims(payload)) return fail("invalid_token");
    return ok(payload);
  } catch (error) {
    if (error instanceof errors.JWTExpired) return fail("expired");
    if (error instanceof errors.JOSEError || error instanceof TypeError) return fail("invalid_token");
    throw error;
  }
}

function isLaunchClaims(payload: Record<string, unknown>): payload is Record<string, unknown> & LaunchClaims {
  return (
    typeof payload.jti === "string" &&
    typeof payload.sub === "string" &&
    typeof payload.aud === "string" &&
    typeof payload.installation_id === "string" &&
    typeof payload.game_id === "number" &&
    typeof payload.channel_id === "string" &&
    typeof payload.build_version === "string"
  );
}
