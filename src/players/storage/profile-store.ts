import type { Db } from "mongodb";
import { type Engine, throwIfRefused } from "../../db/engine.js";
import { isDuplicateKeyCode } from "../../db/errors.js";
import { projectScopedId } from "../../db/ids.js";
import { slotDocument, slotOf, type ProfileDoc } from "./profile-document.js";
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
  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.profiles = db.collection<ProfileDoc>(PLAYER_PROFILES);
  }

  /** The profiles of `identityKeys`, read by `_id` the engine's way (src/db/engine.ts). */
  async readSlots(projectId: string, identityKeys: readonly string[]): Promise<Map<string, ProfileSlot>> {
    const keys = [...new Set(identityKeys)];
    const docs = await this.engine.readByIds(
      this.profiles,
      keys.map((key) => projectScopedId(projectId, key)),
    );
    return new Map(keys.map((key, i) => [key, slotOf(docs[i])]));
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
    const failures = await this.engine.writeAll(this.profiles, operations);
    throwIfRefused(
      "profile write",
      failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
    );
    return new Set(failures.map((failure) => failure.index));
  }
}
