import type { Logger } from "../../log.js";
import { WriteBehind } from "../../db/owner-memory.js";

/** A project's membership is written once no change came for this long… */
const QUIET_MS = 1_000;
/** …or once its oldest unwritten change waited this long while changes kept coming. */
const MAX_WAIT_MS = 5_000;
/** Waits before a failed write is tried again: doubling from the first, capped at the last. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

/** Writes the named documents (pages, counts) of a project as the memory holds them now. */
export type WriteRemembered = (projectId: string, ids: readonly string[]) => Promise<void>;

interface ProjectState {
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
  /** A document's entry is its `_id`: it is written whole, as the memory holds it when written. */
  private readonly pending = new WriteBehind<string>({ idOf: (id) => id, merge: (_, later) => later });

  constructor(private readonly options: { write: WriteRemembered; log?: Logger }) {}

  /** Documents of the project (their `_id`s) changed in memory. */
  changed(projectId: string, ids: readonly string[]): void {
    const state = this.stateOf(projectId);
    if (!this.pending.waits(projectId)) state.since = Date.now();
    this.pending.add(ids, Date.now());
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
    let inFlight = 0;
    for (const state of this.projects.values()) inFlight += state.inFlight;
    return this.pending.size + inFlight;
  }

  private stateOf(projectId: string): ProjectState {
    let state = this.projects.get(projectId);
    if (!state) {
      state = { changes: 0, written: 0, since: 0, inFlight: 0, failures: 0, waiters: [] };
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
    const taken = this.pending.take({ project: projectId });
    if (taken.length === 0) return;
    const upTo = state.changes;
    state.inFlight = taken.length;
    state.writing = this.options.write(
      projectId,
      taken.map(({ entry }) => entry),
    );
    try {
      await state.writing;
    } catch (error) {
      for (const { entry, at } of taken) this.pending.add([entry], at);
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
    if (this.pending.waits(projectId)) this.schedule(projectId, state, QUIET_MS);
  }
}
