import type { Clock } from "../clock.js";
import { InvalidArgumentError, NotFoundError } from "../errors.js";
import type { ConfigChanges } from "./changes.js";
import { checkEntry, MAX_KEYS_PER_PROJECT, type ConfigEntry, type EntryInput } from "./rules/entry.js";
import type { EntryRecord, EntryStore, VersionRecord } from "./storage/entry-store.js";

export interface Page {
  page: number;
  pageSize: number;
}

/** One page of `items` (pages start at 1), and how many there are in all. */
export function pageOf<T>(items: readonly T[], { page, pageSize }: Page): { items: T[]; total: number } {
  return { items: items.slice((page - 1) * pageSize, page * pageSize), total: items.length };
}

const invalid = (message: string) => new InvalidArgumentError(message);

/** A project's config entries: their changes (each a new version, made by an API key) and reads. */
export class ConfigEntries {
  constructor(private readonly deps: { store: EntryStore; changes: ConfigChanges; clock: Clock }) {}

  async update(projectId: string, input: EntryInput, keyId: string): Promise<EntryRecord> {
    const entry = checkEntry(input);
    return this.change(projectId, entry.key, keyId, async (current) => {
      if (!current) await this.roomForKey(projectId);
      return entry;
    });
  }

  /** A new version whose entry is version `version`'s (a deleted entry comes back). */
  async restore(projectId: string, key: string, version: number, keyId: string): Promise<EntryRecord> {
    return this.change(projectId, key, keyId, async (current) => {
      const old = await this.deps.store.version(projectId, key, version);
      if (!old) throw new NotFoundError(`version: ${key} has no version ${version}`);
      if (!old.entry) throw invalid(`version: version ${version} of ${key} deleted it; restore one before it`);
      if (!current) await this.roomForKey(projectId);
      return old.entry;
    });
  }

  /** Deletes the entry; answers the version its deletion made. */
  async delete(projectId: string, key: string, keyId: string): Promise<number> {
    const deleted = await this.change(projectId, key, keyId, async (current) => {
      if (!current) throw new NotFoundError(`key: the project has no config entry ${key}`);
      return null;
    });
    return deleted.version;
  }

  async list(projectId: string, page: Page): Promise<{ items: EntryRecord[]; total: number }> {
    return pageOf(await this.deps.store.list(projectId), page);
  }

  /** The key's versions, newest first (none for a key never written). */
  async history(projectId: string, key: string, { page, pageSize }: Page) {
    const { version } = await this.deps.store.find(projectId, key);
    const newest = version - (page - 1) * pageSize;
    const versions = await this.deps.store.history(projectId, key, newest, Math.max(1, newest - pageSize + 1));
    return { versions, total: version };
  }

  /** Writes the next version of `key`, as `next` decides it from the live entry (null: none); null deletes. */
  private change<E extends ConfigEntry | null>(
    projectId: string,
    key: string,
    keyId: string,
    next: (current: EntryRecord | null) => Promise<E>,
  ): Promise<Omit<EntryRecord, "entry"> & { entry: E }> {
    const { store, changes, clock } = this.deps;
    return changes.run(projectId, `config entry ${key}`, async () => {
      const { version, record } = await store.find(projectId, key);
      const entry = await next(record);
      const updatedAt = clock.now();
      const written = await store.write(projectId, key, version, { entry, keyId, at: updatedAt });
      const keys = (entry === null ? 0 : 1) - (record === null ? 0 : 1);
      return written ? { value: { entry, version: version + 1, updatedAt }, change: { key, entry }, keys } : undefined;
    });
  }

  /**
   * The project's changes count its live entries; only a count at the limit is checked against the entries
   * themselves (a change a crash cut short between its entry and the count leaves the count behind).
   */
  private async roomForKey(projectId: string): Promise<void> {
    const { store, changes } = this.deps;
    if ((await changes.liveKeys(projectId)) < MAX_KEYS_PER_PROJECT) return;
    if ((await store.countLive(projectId)) >= MAX_KEYS_PER_PROJECT) {
      throw invalid(`key: the project has ${MAX_KEYS_PER_PROJECT} config entries, the most it can have`);
    }
  }
}

export type { EntryRecord, VersionRecord };
