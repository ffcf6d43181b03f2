import { performance } from "node:perf_hooks";
import type { Logger } from "../log.js";

/** What the owner keeps in memory: the projects, and per project each capability's fill. */
export interface OwnerMemoryParts {
  projectIds(): Promise<string[]>;
  /** Filled side by side for each project; each one streaming read of its collection by the project's `_id` range. */
  fills: readonly ((projectId: string) => Promise<void>)[];
}

/**
 * A start's fill of the owner's memory (embedded engine), project by project, before the instance says it is ready:
 * the first search, update or chart after a restart then finds what it needs in memory instead of waiting for a fill.
 * A fill that fails (the database past its deadline) is logged and left to the reads, which fill as they need, as
 * they did before; a stop ends it between two reads.
 */
export class OwnerMemoryFill {
  readonly done: Promise<void>;
  private projects: number | undefined;
  private filled = 0;
  private finished = false;

  constructor(
    private readonly parts: OwnerMemoryParts,
    private readonly signal: AbortSignal,
    private readonly log: Logger,
  ) {
    this.done = this.run();
  }

  /** Why the instance is not ready yet, while the fill runs; undefined once it ended. */
  get pending(): string | undefined {
    if (this.finished) return undefined;
    return `filling the owner's memory: ${this.filled} of ${this.projects ?? "?"} projects`;
  }

  private async run(): Promise<void> {
    const started = performance.now();
    try {
      const projectIds = await this.parts.projectIds();
      this.projects = projectIds.length;
      for (const projectId of projectIds) {
        if (this.signal.aborted) return;
        // Side by side: each is one read of its own collection, and the engine decodes them on all its cores.
        await Promise.all(this.parts.fills.map((fill) => fill(projectId)));
        this.filled++;
      }
      const seconds = Math.round(performance.now() - started) / 1000;
      this.log.info({ projects: this.filled, seconds }, "owner's memory filled");
    } catch (error) {
      if (this.signal.aborted) return;
      this.log.warn({ err: error }, "could not fill the owner's memory at start; reads fill it as they need it");
    } finally {
      this.finished = true;
    }
  }
}
