/** The first wait before a failing project's segment is tried again; it doubles on each failure up to MAX. */
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;

/**
 * The projects whose apply failed, each set aside until its backoff ends, so
 * that one project's failure never holds back the others' events (worker.ts).
 */
export class SetAsideProjects {
  private readonly projects = new Map<string, { untilMs: number; backoffMs: number }>();

  /** Whether `projectId`'s segments wait at `nowMs`. */
  waits(projectId: string, nowMs: number): boolean {
    const entry = this.projects.get(projectId);
    return entry !== undefined && nowMs < entry.untilMs;
  }

  failed(projectId: string, nowMs: number): void {
    const backoffMs = Math.min(MAX_BACKOFF_MS, (this.projects.get(projectId)?.backoffMs ?? FIRST_BACKOFF_MS / 2) * 2);
    this.projects.set(projectId, { untilMs: nowMs + backoffMs, backoffMs });
  }

  succeeded(projectId: string): void {
    this.projects.delete(projectId);
  }
}
