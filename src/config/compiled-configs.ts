import type { Clock } from "../clock.js";
import { changedConfig, compileConfig, type CompiledConfig, type ConfigChange } from "./rules/compiled.js";
import type { EntryStore } from "./storage/entry-store.js";
import type { ExperimentStore } from "./storage/experiment-store.js";
import type { HeadStore } from "./storage/head-store.js";

/** How often, at most, an instance asks whether another one changed a project's config (one point read). */
export const VERSION_CHECK_MS = 1_000;
/** A compile older than this is made again even at the same version: a change whose instance died before it advanced the version still arrives. */
const RECOMPILE_MS = 60_000;

interface Slot {
  compiled: Promise<CompiledConfig>;
  /** The compile once it is made (undefined while it is read). */
  settled?: CompiledConfig;
  compiledAt: number;
  checkedAt: number;
}

export interface CompiledConfigsOptions {
  entries: EntryStore;
  experiments: ExperimentStore;
  heads: HeadStore;
  clock: Clock;
  /**
   * Whether another instance may change a project's config (MongoDB): then a project's version is read at most
   * once a second, on a call that needs the config; the embedded engine's one owner makes every change itself.
   */
  othersWrite: boolean;
}

/**
 * Each project's config compiled in memory (its entries and running experiments), made at its first use and
 * again after a change: at once on this instance (`changed`), within VERSION_CHECK_MS on the others.
 */
export class CompiledConfigs {
  private readonly slots = new Map<string, Slot>();

  constructor(private readonly options: CompiledConfigsOptions) {}

  of(projectId: string): Promise<CompiledConfig> {
    const now = this.options.clock.now().getTime();
    const slot = this.slots.get(projectId);
    if (!slot) {
      const first: Slot = { compiled: this.read(projectId), compiledAt: now, checkedAt: now };
      this.slots.set(projectId, first);
      return this.kept(projectId, first);
    }
    if (this.options.othersWrite && now - slot.checkedAt >= VERSION_CHECK_MS) {
      slot.checkedAt = now;
      slot.compiled = this.checked(projectId, slot, now);
      return this.kept(projectId, slot);
    }
    return slot.compiled;
  }

  /**
   * A change made here, which made `version`: a compile of the version before it takes the change in at once (only
   * what changed is compiled); any other is forgotten, and the next call compiles the project whole.
   */
  changed(projectId: string, version: number, change: ConfigChange): void {
    const slot = this.slots.get(projectId);
    if (slot?.settled?.version !== version - 1) return this.forget(projectId);
    slot.settled = changedConfig(slot.settled, version, change);
    slot.compiled = Promise.resolve(slot.settled);
  }

  /** The next call compiles the project whole. */
  forget(projectId: string): void {
    this.slots.delete(projectId);
  }

  /** The slot's compile, or a new one when the project's version moved (or the compile is old). */
  private async checked(projectId: string, slot: Slot, now: number): Promise<CompiledConfig> {
    const [{ version }, compiled] = await Promise.all([this.options.heads.read(projectId), slot.compiled]);
    if (version === compiled.version && now - slot.compiledAt < RECOMPILE_MS) return compiled;
    slot.compiledAt = now;
    return this.read(projectId);
  }

  /** The slot's compile; one that fails is not kept, so the next call reads again. */
  private kept(projectId: string, slot: Slot): Promise<CompiledConfig> {
    const compiled = slot.compiled;
    slot.settled = undefined;
    compiled.then(
      (settled) => {
        if (slot.compiled === compiled) slot.settled = settled;
      },
      () => {
        if (this.slots.get(projectId)?.compiled === compiled) this.slots.delete(projectId);
      },
    );
    return compiled;
  }

  /** The version first: a change landing during the reads makes the next check compile again. */
  private async read(projectId: string): Promise<CompiledConfig> {
    const { entries, experiments, heads } = this.options;
    const { version } = await heads.read(projectId);
    const [records, experimentRecords] = await Promise.all([entries.list(projectId), experiments.list(projectId)]);
    return compileConfig(
      projectId,
      version,
      records.map((record) => record.entry),
      experimentRecords.map((record) => record.experiment),
    );
  }
}
