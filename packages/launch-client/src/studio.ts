import { createHash } from "node:crypto";
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { VerifyResponseSchema, type VerifyResponse } from "../gen/platformapi/v1/launch_pb.js";

// What a reply with `valid: true` always carries; the proto marks them "set when valid".
const VERIFIED_FIELDS = ["platformUserId", "partnerUserId", "installationId", "issuedAt", "entitlement"] as const;

/** A verified launch: the service's VerifyResponse, with the identity and the entitlement present. */
export type VerifiedLaunch = VerifyResponse & Required<Pick<VerifyResponse, (typeof VERIFIED_FIELDS)[number]>>;

const LAUNCH_REJECTIONS = ["expired", "invalid_token", "unknown_token", "already_used"] as const;
export type LaunchRejection = (typeof LAUNCH_REJECTIONS)[number];

/** Every way a verification can end; `verify` never throws. */
export type LaunchCheck =
  | {
      status: "verified";
      launch: VerifiedLaunch;
      /** The project's in_launch config for the player, each value as plain JSON (launch.config holds them as protobuf Values). */
      config: Record<string, JsonValue>;
      /** The player's variant of each running experiment they are eligible for, by experiment name. */
      experiments: Record<string, string>;
    }
  | { status: "rejected"; error: LaunchRejection }
  /** No token, the service unreachable or failing, or a refused key: nothing was learned about the launch. */
  | { status: "unavailable"; reason: string };

export interface LaunchVerifierOptions {
  /** Base URL of the service, e.g. "http://localhost:8080". */
  baseUrl: string;
  /** The project's private key (scope launch:verify). Keep it on the backend. */
  privateKey: string;
  /** Sessions remembered; the oldest are forgotten first. */
  maxSessions?: number;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface LaunchVerifier {
  verify(token: string | undefined): Promise<LaunchCheck>;
}

/**
 * Verifies each launch token once and remembers the answer for the session:
 * a game process and the processes it starts send the same inherited token,
 * and all of them get the first answer instead of `already_used`. Concurrent
 * calls with one token share one request. An `unavailable` answer is not
 * remembered, so the next call tries again.
 */
export function createLaunchVerifier(options: LaunchVerifierOptions): LaunchVerifier {
  const { baseUrl, privateKey, maxSessions = 10_000, timeoutMs = 5_000, fetch: fetchFn = fetch } = options;
  const sessions = new Map<string, Promise<LaunchCheck>>();

  async function call(token: string): Promise<LaunchCheck> {
    let res: Response;
    try {
      res = await fetchFn(new URL("/v1/launch_tokens/verify", baseUrl), {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": privateKey },
        body: JSON.stringify({ token }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      return { status: "unavailable", reason: `service unreachable: ${(error as Error).message}` };
    }
    if (res.status !== 200) return { status: "unavailable", reason: `service answered HTTP ${res.status}` };
    let reply: VerifyResponse;
    try {
      // Fields a newer service adds are skipped; a reply of the wrong shape is not a verdict.
      reply = fromJson(VerifyResponseSchema, await res.json(), { ignoreUnknownFields: true });
    } catch (error) {
      return { status: "unavailable", reason: `service answered an unreadable reply: ${(error as Error).message}` };
    }
    return readVerdict(reply);
  }

  return {
    async verify(token) {
      if (!token) return { status: "unavailable", reason: "no launch token" };
      // Sessions are keyed by a hash so the cache never holds live tokens.
      const key = createHash("sha256").update(token).digest("base64url");
      let answer = sessions.get(key);
      if (!answer) {
        answer = call(token);
        sessions.set(key, answer);
        if (sessions.size > maxSessions) sessions.delete(sessions.keys().next().value!);
      }
      const check = await answer;
      if (check.status === "unavailable") sessions.delete(key);
      return check;
    },
  };
}

/** True when the reply says valid and carries everything a valid reply does. */
function isVerifiedLaunch(reply: VerifyResponse): reply is VerifiedLaunch {
  return reply.valid && VERIFIED_FIELDS.every((field) => reply[field] !== undefined);
}

function readVerdict(reply: VerifyResponse): LaunchCheck {
  if (isVerifiedLaunch(reply)) {
    const config = Object.fromEntries(
      Object.entries(reply.config).map(([key, value]) => [key, toJson(ValueSchema, value)]),
    );
    return { status: "verified", launch: reply, config, experiments: { ...reply.experiments } };
  }
  if (reply.valid) return { status: "unavailable", reason: "service answered valid without the launch's identity" };
  const error = LAUNCH_REJECTIONS.find((rejection) => rejection === reply.error);
  if (error) return { status: "rejected", error };
  return { status: "unavailable", reason: `service answered an unknown rejection: ${reply.error ?? "none"}` };
}

/** What the game may do, by the recommended partner policy. */
export interface LaunchAccess {
  /** Always true: the token is never required to boot the game. */
  singlePlayer: boolean;
  /** Online services, multiplayer and cloud saves: only for a verified launch of an owned game. */
  online: boolean;
  reason: "verified" | "not_owned" | LaunchRejection | "unavailable";
}

/**
 * The recommended policy: on any failure (missing, expired, refused, service
 * unreachable) allow single-player and deny online; allow online only when the
 * launch verified and the user owns the game.
 */
export function launchAccess(check: LaunchCheck): LaunchAccess {
  switch (check.status) {
    case "verified":
      return check.launch.entitlement.owns
        ? { singlePlayer: true, online: true, reason: "verified" }
        : { singlePlayer: true, online: false, reason: "not_owned" };
    case "rejected":
      return { singlePlayer: true, online: false, reason: check.error };
    case "unavailable":
      return { singlePlayer: true, online: false, reason: "unavailable" };
  }
}
