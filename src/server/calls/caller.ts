import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { ApiKeyType, Scope } from "../../admin/api-keys.js";

/** Who is calling: the API key the auth interceptor accepted. */
export interface Caller {
  keyId: string;
  type: ApiKeyType;
  scopes: readonly Scope[];
  /** The project the key belongs to; null for platform and admin keys. */
  projectId: string | null;
}

export const callerKey = createContextKey<Caller | undefined>(undefined, { description: "authenticated caller" });

/** The caller of an RPC whose scope the interceptor has checked. */
export function callerOf(ctx: HandlerContext): Caller {
  const caller = ctx.values.get(callerKey);
  if (!caller) throw new ConnectError("missing API key", Code.Unauthenticated);
  return caller;
}

/**
 * The project whose data this call may touch: always the caller key's own
 * project, never one named in the request.
 */
export function projectOf(ctx: HandlerContext): string {
  const { projectId } = callerOf(ctx);
  if (!projectId) throw new ConnectError("this method needs a project key (private or public)", Code.PermissionDenied);
  return projectId;
}
