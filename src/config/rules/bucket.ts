import { hash } from "node:crypto";

/** The buckets a player can fall in for a name: 0 to 9,999, a hundredth of a percent each. */
export const BUCKETS = 10_000;

/**
 * The player's bucket for `name` (a config key or an experiment's name) in the project: the first 32 bits of
 * SHA-256 of `<project id>/<name>/<identity key>` (UTF-8), big-endian, modulo 10,000. It depends on nothing else,
 * so it is the same on every instance, after a restart, and in any client that computes it.
 */
export function bucketOf(projectId: string, name: string, identityKey: string): number {
  return hash("sha256", `${projectId}/${name}/${identityKey}`, "buffer").readUInt32BE(0) % BUCKETS;
}
