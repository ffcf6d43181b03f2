import { setTimeout as sleep } from "node:timers/promises";
import { performance } from "node:perf_hooks";
import type { Logger } from "../log.js";
import { isDatabaseUnavailable } from "./errors.js";

/** What the owner keeps in memory: the projects, and per project each capability's fill. */
export interface OwnerMemoryParts {
  projectIds(): Promise<string[]>;
  /** Filled side by side for each project; each one streaming read of its collection by the project's `_id` range. */
  fills: readonly ((projectId: string) => Promise<void>)[];
}

/** Waits between attempts of a fill that failed: doubling from the first, at most the last. */
export const FILL_RETRY_MS = { first: 500, most: 10_000 } as const;

/**
 * A start's fill of the owner's memory (embedded engine), project by project, before the instance says it is ready:
 * the first search, update or chart after a restart then finds what it needs in memory instead of waiting for a fill.
 * A fill that fails (the database past its deadline) is tried again, with backoff, until it succeeds: the instance is
 * not ready meanwhile. A stop ends it between two reads.
 */
export class OwnerMemoryFill {
  readonly done: Promise<void>;
  private projects: number | undefined;
  private filled = 0;
  private finished = false;
  /** Why the last attempt failed, while the next one waits. */
  private failure: string | undefined;

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
    const progress = `${this.filled} of ${this.projects ?? "?"} projects`;
    if (this.failure !== undefined)
      return `could not fill the owner's memory (${this.failure}), trying again: ${progress}`;
    return `filling the owner's memory: ${progress}`;
  }

  private async run(): Promise<void> {
    const started = performance.now();
    try {
      for (let attempt = 1, waitMs: number = FILL_RETRY_MS.first; ; attempt++) {
        try {
          await this.attempt();
          break;
        } catch (error) {
          if (this.signal.aborted) return;
          // Said on /readyz, which needs no key: what kind of failure, its details only in the log.
          this.failure = isDatabaseUnavailable(error) ? "the database did not answer" : "an error, see the log";
          this.log.warn({ err: error, attempt, retryInMs: waitMs }, "could not fill the owner's memory; trying again");
          await sleep(waitMs, undefined, { signal: this.signal }).catch(() => undefined);
          if (this.signal.aborted) return;
          waitMs = Math.min(2 * waitMs, FILL_RETRY_MS.most);
        }
      }
      if (this.signal.aborted) return;
      const seconds = Math.round(performance.now() - started) / 1000;
      this.log.info({ projects: this.filled, seconds }, "owner's memory filled");
    } finally {
      this.finished = true;
    }
  }

  /** One pass over the projects; a project filled by an earlier attempt is whole in memory already, and quick. */
  private async attempt(): Promise<void> {
    const projectIds = await this.parts.projectIds();
    this.projects = projectIds.length;
    this.filled = 0;
    for (const projectId of projectIds) {
      if (this.signal.aborted) return;
      // Side by side: each is one read of its own collection, and the engine decodes them on all its cores.
      await Promise.all(this.parts.fills.map((fill) => fill(projectId)));
      this.filled++;
    }
    this.failure = undefined;
  }
}
