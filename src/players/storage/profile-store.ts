import type { Db } from "mongodb";
import { type Engine, throwIfRefused } from "../../db/engine.js";
import { isDuplicateKeyCode } from "../../db/errors.js";
import { projectScopedId } from "../../db/ids.js";
import type { ChunkCache } from "../../sets/chunk-cache.js";
import { slotDocument, slotOf, writtenSlot, type ProfileDoc } from "./profile-document.js";
import type { ProfileSlot, SlotWrite } from "../rules/profile.js";

export const PLAYER_PROFILES = "player_profiles";

/** The player_profiles collection: one document per player and project, `_id` `<project>/<identity_key>`. */
export class ProfileStore {
  private readonly profiles;

  /**
   * Where the engine does not isolate updates (FerretDB 1.24), the version
   * guard buys nothing and costs a slower replace; writes to a profile are
   * serialised in-process instead.
   */
  /** `cache`: where the sole writer keeps the profiles it read and wrote (what it wrote is all there is). */
  constructor(
    db: Db,
    private readonly engine: Engine,
    private readonly cache: ChunkCache,
  ) {
    this.profiles = db.collection<ProfileDoc>(PLAYER_PROFILES);
  }

  /** The profiles of `identityKeys`: the sole writer's from its cache where it holds them, the rest read by `_id`. */
  async readSlots(projectId: string, identityKeys: readonly string[]): Promise<Map<string, ProfileSlot>> {
    const keys = [...new Set(identityKeys)];
    const slots = new Map<string, ProfileSlot>();
    const missing: string[] = [];
    for (const key of keys) {
      const held = this.engine.soleWriter ? this.cache.get<ProfileSlot>(this.cacheKey(projectId, key)) : undefined;
      if (held) slots.set(key, held.value);
      else missing.push(key);
    }
    const docs = await this.engine.readByIds(
      this.profiles,
      missing.map((key) => projectScopedId(projectId, key)),
    );
    missing.forEach((key, i) => slots.set(key, this.kept(projectId, key, slotOf(docs[i]))));
    return new Map(keys.map((key) => [key, slots.get(key)!]));
  }

  /**
   * Of the profiles a round wrote (each at its read version + 1), those another instance has written since: their
   * sets are written again from what they hold now. None where this instance is the only writer.
   */
  async overtaken(projectId: string, writes: readonly { identityKey: string; read: ProfileSlot }[]): Promise<string[]> {
    if (this.engine.soleWriter || writes.length === 0) return [];
    const slots = await this.readSlots(
      projectId,
      writes.map((write) => write.identityKey),
    );
    return writes.filter((w) => slots.get(w.identityKey)!.version !== w.read.version + 1).map((w) => w.identityKey);
  }

  /**
   * Writes each profile (or tombstone) if it is still at the version it was
   * read at, in batches the engine takes; returns the indexes of the writes
   * that lost to another writer. The guard is an upsert on `{_id, version}`:
   * a document at another version makes it a duplicate key, reported per
   * statement. On FerretDB, whose writes to a profile are serialised in this
   * process, the filter is `_id` alone.
   */
  async writeSlots(projectId: string, writes: readonly SlotWrite[]): Promise<Set<number>> {
    const operations = writes.map(({ identityKey, readVersion, next }) => {
      const { _id, ...doc } = slotDocument(projectId, identityKey, next, readVersion + 1);
      const filter = this.engine.isolatesUpdates ? { _id, version: readVersion } : { _id };
      return { replaceOne: { filter, replacement: doc, upsert: true } };
    });
    let lost: Set<number>;
    try {
      const failures = await this.engine.writeAll(this.profiles, operations);
      throwIfRefused(
        "profile write",
        failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
      );
      lost = new Set(failures.map((failure) => failure.index));
    } catch (error) {
      for (const write of writes) this.cache.delete(this.cacheKey(projectId, write.identityKey));
      throw error;
    }
    writes.forEach((write, i) => {
      const key = this.cacheKey(projectId, write.identityKey);
      if (lost.has(i) || !this.engine.soleWriter) this.cache.delete(key);
      else this.cache.set(key, { value: writtenSlot(write), v: write.readVersion + 1, bytes: slotBytes(write) });
    });
    return lost;
  }

  /** A slot read, kept by the sole writer unless it holds a newer one (its own write landed while the read was out). */
  private kept(projectId: string, identityKey: string, slot: ProfileSlot): ProfileSlot {
    if (!this.engine.soleWriter) return slot;
    const key = this.cacheKey(projectId, identityKey);
    const held = this.cache.get<ProfileSlot>(key);
    if (held && held.v >= slot.version) return held.value;
    this.cache.set(key, { value: slot, v: slot.version, bytes: 512 });
    return slot;
  }

  private cacheKey(projectId: string, identityKey: string): string {
    return `${PLAYER_PROFILES}/${projectScopedId(projectId, identityKey)}`;
  }
}

/** Bytes a profile holds in memory, near enough for the cache's budget. */
function slotBytes({ identityKey, next }: SlotWrite): number {
  const profile = "profile" in next ? next.profile : null;
  const traits = [...(profile?.traits ?? [])].reduce(
    (sum, [key, value]) => sum + 2 * (key.length + String(value).length),
    0,
  );
  return 400 + 2 * identityKey.length + 40 * (profile?.tags.length ?? 0) + traits;
}
