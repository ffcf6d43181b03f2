import type { Logger } from "../../log.js";

/** A project's membership is written once no change came for this long… */
const QUIET_MS = 1_000;
/** …or once its oldest unwritten change waited this long while changes kept coming. */
const MAX_WAIT_MS = 5_000;
/** Waits before a failed write is tried again: doubling from the first, capped at the last. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

/** Writes the named documents of a project as the memory holds them now. */
export type WriteRemembered = (projectId: string, bucketIds: readonly string[], stats: boolean) => Promise<void>;

interface ProjectState {
  buckets: Set<string>;
  stats: boolean;
  /** Changes made so far, and how many of them are in the database. */
  changes: number;
  written: number;
  /** When the oldest unwritten change was made. */
  since: number;
  timer?: NodeJS.Timeout;
  writing?: Promise<void>;
  /** Documents of the write in flight. */
  inFlight: number;
  failures: number;
  waiters: { upTo: number; resolve: () => void }[];
}

/**
 * When the owner's changes of membership and counts, made in its memory
 * first, reach the database: a project's are written together once no change
 * came for QUIET_MS, or after MAX_WAIT_MS while changes keep coming, so a
 * bucket many rounds change is written once. A write that fails keeps them
 * waiting and is tried again. A round's changed players stay recorded until its resync
 * is applied, and the resync is queued once `written` says its membership is
 * in the database, so a crash before that is repaired from the record.
 */
export class MembershipWriteBehind {
  private readonly projects = new Map<string, ProjectState>();

  constructor(private readonly options: { write: WriteRemembered; log?: Logger }) {}

  /** `bucketIds` (and the counts, with `stats`) of the project changed in memory. */
  changed(projectId: string, bucketIds: Iterable<string>, stats: boolean): void {
    const state = this.stateOf(projectId);
    if (state.buckets.size === 0 && !state.stats) state.since = Date.now();
    for (const id of bucketIds) state.buckets.add(id);
    state.stats ||= stats;
    state.changes++;
    if (state.failures === 0)
      this.schedule(projectId, state, Math.min(QUIET_MS, state.since + MAX_WAIT_MS - Date.now()));
  }

  /** Resolves once every change of the project made before the call is in the database. */
  written(projectId: string): Promise<void> {
    const state = this.projects.get(projectId);
    if (!state || state.written >= state.changes) return Promise.resolve();
    return new Promise((resolve) => state.waiters.push({ upTo: state.changes, resolve }));
  }

  /** Writes what waits in every project now (a clean stop); throws the first failure once all were tried. */
  async writeAll(): Promise<void> {
    const results = await Promise.allSettled([...this.projects.keys()].map((projectId) => this.writeNow(projectId)));
    const failed = results.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** The documents changed and not yet acknowledged by the database, over every project (a metric). */
  get waiting(): number {
    let documents = 0;
    for (const state of this.projects.values())
      documents += state.buckets.size + (state.stats ? 1 : 0) + state.inFlight;
    return documents;
  }

  private stateOf(projectId: string): ProjectState {
    let state = this.projects.get(projectId);
    if (!state) {
      state = {
        buckets: new Set(),
        stats: false,
        changes: 0,
        written: 0,
        since: 0,
        inFlight: 0,
        failures: 0,
        waiters: [],
      };
      this.projects.set(projectId, state);
    }
    return state;
  }

  private schedule(projectId: string, state: ProjectState, inMs: number): void {
    clearTimeout(state.timer);
    state.timer = setTimeout(() => void this.writeNow(projectId).catch(() => undefined), Math.max(0, inMs));
    state.timer.unref();
  }

  /** Writes what waits in the project, after any write in flight; a failure is logged and tried again later. */
  private async writeNow(projectId: string): Promise<void> {
    const state = this.stateOf(projectId);
    clearTimeout(state.timer);
    state.timer = undefined;
    while (state.writing) await state.writing.catch(() => undefined);
    if (state.buckets.size === 0 && !state.stats) return;
    const buckets = [...state.buckets];
    const stats = state.stats;
    const upTo = state.changes;
    state.buckets.clear();
    state.stats = false;
    state.inFlight = buckets.length + (stats ? 1 : 0);
    state.writing = this.options.write(projectId, buckets, stats);
    try {
      await state.writing;
    } catch (error) {
      for (const id of buckets) state.buckets.add(id);
      state.stats ||= stats;
      state.failures++;
      const wait = Math.min(FIRST_RETRY_MS * 2 ** (state.failures - 1), MAX_RETRY_MS);
      this.options.log?.warn(
        { projectId, error: (error as Error)?.message, retryInMs: wait },
        "tag membership kept in memory not written yet; retrying",
      );
      this.schedule(projectId, state, wait);
      throw error;
    } finally {
      state.writing = undefined;
      state.inFlight = 0;
    }
    state.failures = 0;
    state.written = upTo;
    state.waiters = state.waiters.filter((waiter) => (waiter.upTo <= upTo ? void waiter.resolve() : true));
    if (state.buckets.size > 0 || state.stats) this.schedule(projectId, state, QUIET_MS);
  }
}
