import { getOption } from "@bufbuild/protobuf";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { Health } from "../../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ServerReflectionV1 } from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { required_scope } from "../../../gen/platformapi/v1/options_pb.js";
import {
  type ApiKeyCache,
  apiKeyHashesMatch,
  type ApiKeyRecord,
  hashApiKey,
  type Scope,
} from "../../admin/api-keys.js";
import { callerKey, type Caller } from "./caller.js";
import { clientAddressKey } from "../http/client-address.js";
import type { FailedAuthLimit } from "./rate-limit.js";

export const API_KEY_HEADER = "x-api-key";

const KNOWN_SCOPES = new Set<string>([
  "launch:issue",
  "launch:verify",
  "events:write",
  "events:read",
  "players:manage",
  "admin",
  "public",
]);

/**
 * gRPC's own reflection and health services, whose vendored protos cannot declare a scope: public, as on
 * any gRPC server (they reveal the API's shape and readiness, never data). Named here so no other service
 * is public by omission.
 */
const PUBLIC_STANDARD_SERVICES = new Set<DescService>([ServerReflectionV1, ServerReflectionV1alpha, Health]);

// Read once per method: reading the option parses the method's options (about 15 µs, on every call otherwise).
const scopes = new WeakMap<DescMethod, Scope | "public">();

/** The scope a method declares in the proto; throws for a method that declares none, so nothing is public by omission. */
export function requiredScope(method: DescMethod): Scope | "public" {
  let scope = scopes.get(method);
  if (scope === undefined) {
    scope = declaredScope(method);
    scopes.set(method, scope);
  }
  return scope;
}

function declaredScope(method: DescMethod): Scope | "public" {
  if (PUBLIC_STANDARD_SERVICES.has(method.parent)) return "public";
  const scope = getOption(method, required_scope);
  if (!KNOWN_SCOPES.has(scope)) {
    throw new Error(`${method.parent.typeName}.${method.name} declares no valid platformapi.v1.required_scope`);
  }
  return scope as Scope | "public";
}

export interface AuthOptions {
  apiKeys: ApiKeyCache;
  failedAuthentications: FailedAuthLimit;
}

/**
 * Authenticates the X-Api-Key header (gRPC: x-api-key metadata) for every
 * protocol and checks the scope the method declares. Keys are looked up by
 * their SHA-256 hash, never stored or compared in the clear; the lookup is
 * cached briefly (see ApiKeyCache for when a revocation takes effect).
 */
export function authInterceptor(options: AuthOptions): Interceptor {
  return (next) => async (req) => {
    const scope = requiredScope(req.method);
    if (scope === "public") return next(req);
    const record = await authenticate(req.header.get(API_KEY_HEADER), req.contextValues.get(clientAddressKey), options);
    if (!record.scopes.includes(scope)) {
      throw new ConnectError(`this API key (${record.type}) lacks the scope ${scope}`, Code.PermissionDenied);
    }
    req.contextValues.set(callerKey, callerOfRecord(record));
    return next(req);
  };
}

// The caller a key's record stands for, made once per record read rather than on every call.
const callers = new WeakMap<ApiKeyRecord, Caller>();
function callerOfRecord(record: ApiKeyRecord): Caller {
  let caller = callers.get(record);
  if (!caller) {
    caller = { keyId: record.keyId, type: record.type, scopes: record.scopes, projectId: record.projectId };
    callers.set(record, caller);
  }
  return caller;
}

/**
 * The record of a good key. Every database read of a key not known to be
 * good spends one of the client's attempts first (429 once they are spent),
 * given back when the key proves good; so does every other failure. A key
 * that was good when last read, or whose read is already in flight, costs
 * no attempt.
 */
async function authenticate(
  key: string | null,
  address: string,
  { apiKeys, failedAuthentications }: AuthOptions,
): Promise<ApiKeyRecord> {
  if (!key) {
    failedAuthentications.spend(address);
    throw new ConnectError("missing API key: send it in the X-Api-Key header", Code.Unauthenticated);
  }
  const hash = hashApiKey(key);
  const lastRead = apiKeys.lastRead(hash);
  let spent = false;
  const spend = () => {
    failedAuthentications.spend(address);
    spent = true;
  };
  const record = await apiKeys
    .findByHash(hash, lastRead && isUsable(lastRead, hash) ? undefined : spend)
    .catch((error: unknown) => {
      // A read that failed (database unavailable) is no failed authentication.
      if (spent) failedAuthentications.giveBack(address);
      throw error;
    });
  if (record && isUsable(record, hash)) {
    if (spent) failedAuthentications.giveBack(address);
    return record;
  }
  if (!spent) failedAuthentications.spend(address);
  throw new ConnectError("unknown or revoked API key", Code.Unauthenticated);
}

function isUsable(record: ApiKeyRecord, hash: Buffer): boolean {
  return apiKeyHashesMatch(hash, record.hash) && !record.revokedAt;
}
