/** The environment variables the launcher sets on the game process. */
export const LAUNCH_TOKEN_ENV = "PLATFORM_LAUNCH_TOKEN";
export const TOKEN_EXPIRES_AT_ENV = "PLATFORM_TOKEN_EXPIRES_AT";

/**
 * The launch token, read early in boot; undefined when there is none or when
 * PLATFORM_TOKEN_EXPIRES_AT says it has already expired (skip the call then).
 * An expiry that cannot be parsed does not hide the token: the service decides.
 */
export function readLaunchToken(env: NodeJS.ProcessEnv = process.env, now: Date = new Date()): string | undefined {
  const token = env[LAUNCH_TOKEN_ENV];
  if (!token) return undefined;
  const expiresAt = Date.parse(env[TOKEN_EXPIRES_AT_ENV] ?? "");
  if (!Number.isNaN(expiresAt) && expiresAt <= now.getTime()) return undefined;
  return token;
}

const REDACTED = "[redacted]";
// Any compact JWS/JWT: three base64url parts, the first a JSON header ("eyJ").
const JWT_PATTERN = /eyJ[\w-]*\.[\w-]+\.[\w-]*/g;

/**
 * A copy of `value` safe for logs and crash reports: the launch token (as the
 * environment holds it, or anything shaped like a JWT) is replaced in every
 * string, and the PLATFORM_LAUNCH_TOKEN entry of any object is censored.
 * Errors keep their name, message and stack, redacted.
 */
export function redactLaunchToken<T>(value: T, env: NodeJS.ProcessEnv = process.env): T {
  const token = env[LAUNCH_TOKEN_ENV];
  const seen = new WeakMap<object, unknown>();
  const redactString = (text: string) =>
    (token ? text.split(token).join(REDACTED) : text).replace(JWT_PATTERN, REDACTED);
  const walk = (item: unknown): unknown => {
    if (typeof item === "string") return redactString(item);
    if (typeof item !== "object" || item === null) return item;
    if (seen.has(item)) return seen.get(item);
    if (Array.isArray(item)) {
      const copy: unknown[] = [];
      seen.set(item, copy);
      for (const element of item) copy.push(walk(element));
      return copy;
    }
    const copy: Record<string, unknown> = {};
    seen.set(item, copy);
    if (item instanceof Error) {
      copy.name = item.name;
      copy.message = redactString(item.message);
      copy.stack = item.stack === undefined ? undefined : redactString(item.stack);
    }
    for (const [key, entry] of Object.entries(item)) copy[key] = key === LAUNCH_TOKEN_ENV ? REDACTED : walk(entry);
    return copy;
  };
  return walk(value) as T;
}
