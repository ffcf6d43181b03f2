import { unavailableOf } from "../db/errors.js";
import { KeyedLock } from "../db/keyed-lock.js";
import { ContentionError } from "../errors.js";
import type { CompiledConfigs } from "./compiled-configs.js";
import type { ConfigChange } from "./rules/compiled.js";
import type { HeadStore } from "./storage/head-store.js";

/** What a change's attempt wrote: its answer, the change itself, and by how many it moved the live entries. */
export interface Written<T> {
  value: T;
  change: ConfigChange;
  keys: number;
}

/** Writes a change tries before the call answers `aborted`: each loss is another instance's write of the same thing. */
const ATTEMPTS = 20;

/**
 * Every change of a project's config, entries and experiments alike: one at a time per project on this instance
 * (the embedded engine loses concurrent updates of a document, and the project's limits are counted under it), the
 * project's version advanced once it is written, and this instance's compile of the project dropped.
 */
export class ConfigChanges {
  private readonly locks = new KeyedLock(unavailableOf);

  constructor(
    private readonly heads: HeadStore,
    private readonly compiled: CompiledConfigs,
  ) {}

  /**
   * Runs `attempt` until it writes (an answer other than undefined): it reads, decides and writes what it read over,
   * and says what it changed and by how many the project's live entries.
   */
  run<T>(projectId: string, what: string, attempt: () => Promise<Written<T> | undefined>): Promise<T> {
    return this.locks.run([projectId], async () => {
      let written: Written<T> | undefined;
      let version: number | undefined;
      try {
        for (let i = 0; i < ATTEMPTS && !written; i++) written = await attempt();
        if (!written)
          throw new ContentionError(`${what}: other writers kept changing it; nothing was written, try again`);
        version = await this.heads.advance(projectId, written.keys);
        return written.value;
      } finally {
        // Compiled again in part when this change follows the compile, else whole (a failure: at its next use).
        if (written && version !== undefined) this.compiled.changed(projectId, version, written.change);
        else this.compiled.forget(projectId);
      }
    });
  }

  /** How many live entries the project has, as its changes counted them. */
  async liveKeys(projectId: string): Promise<number> {
    return (await this.heads.read(projectId)).keys;
  }
}
