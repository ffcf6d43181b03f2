import type { Clock } from "../../clock.js";
import { QueueBehindError } from "../../errors.js";
import type { Lag, QueueLagMeter } from "./lag.js";

/** How long a measured lag stands for the next ingest calls: one read of the queue a second, however many calls. */
const MEASURED_LAG_REUSE_MS = 1_000;

/** Retry-After of a call refused for the queue's size: the queue drains continuously, and is measured each second. */
const QUEUE_SIZE_RETRY_AFTER_SECONDS = 10;

/** A limit of the queue whose passing refuses ingestion: its lag, or the number of events waiting in it. */
export type IngestLimit = "lag" | "queue_size";

export const INGEST_LIMITS: readonly IngestLimit[] = ["lag", "queue_size"];

export interface BackpressureOptions {
  /** The queues' lag, measured from the database: right whichever instance applies. */
  lag: Pick<QueueLagMeter, "ofProject">;
  clock: Clock;
  /** EVENT_MAX_LAG_SECONDS: past this lag, ingestion refuses whole calls. */
  maxLagSeconds: number;
  /** EVENT_MAX_QUEUE_EVENTS: with this many events waiting, ingestion refuses whole calls. */
  maxQueueEvents: number;
}

/**
 * Ingestion pushes back when the apply of a project falls behind: while its oldest waiting event is older than
 * EVENT_MAX_LAG_SECONDS, or EVENT_MAX_QUEUE_EVENTS of its events wait, a call of its events is refused whole, so its
 * queue stops growing (in time and in size) and its senders back off; other projects' calls are not held back.
 */
export class Backpressure {
  private readonly projects = new Map<string, ProjectLag>();

  constructor(private readonly options: BackpressureOptions) {}

  /** The limits a queue `lag` behind has reached, each refusing ingestion; none while events are accepted. */
  limitsReached(lag: Lag): IngestLimit[] {
    const reached: IngestLimit[] = [];
    if (lag.seconds > this.options.maxLagSeconds) reached.push("lag");
    if (lag.depth >= this.options.maxQueueEvents) reached.push("queue_size");
    return reached;
  }

  /**
   * Admits a call of `events` events, or throws QueueBehindError, with a time
   * to wait, while a limit refuses events; answers the queue's lag, measured within the last second.
   */
  async admit(projectId: string, events: number): Promise<Lag> {
    const project = this.projects.get(projectId) ?? this.projects.set(projectId, { admitted: 0 }).get(projectId)!;
    const measured = await this.recentLag(projectId, project);
    const lag = { ...measured, depth: measured.depth + project.admitted };
    const [limit] = this.limitsReached(lag);
    if (limit === undefined) {
      project.admitted += events;
      return measured;
    }
    throw limit === "lag" ? this.behindInTime(lag) : this.fullQueue(lag);
  }

  private behindInTime(lag: Lag): QueueBehindError {
    const { maxLagSeconds } = this.options;
    // A hint, not a promise: how far past the limit the lag is, kept between 5 s and a minute.
    const retryAfterSeconds = Math.min(60, Math.max(5, Math.ceil(lag.seconds - maxLagSeconds)));
    return new QueueBehindError(
      `events: the queue is ${Math.floor(lag.seconds)} s behind (EVENT_MAX_LAG_SECONDS ${maxLagSeconds}); ` +
        `nothing was accepted, retry after ${retryAfterSeconds} s`,
      retryAfterSeconds,
    );
  }

  private fullQueue(lag: Lag): QueueBehindError {
    const retryAfterSeconds = QUEUE_SIZE_RETRY_AFTER_SECONDS;
    return new QueueBehindError(
      `events: the queue holds ${lag.depth} events not yet applied (EVENT_MAX_QUEUE_EVENTS ` +
        `${this.options.maxQueueEvents}); nothing was accepted, retry after ${retryAfterSeconds} s`,
      retryAfterSeconds,
    );
  }

  private async recentLag(projectId: string, project: ProjectLag): Promise<Lag> {
    const nowMs = this.options.clock.now().getTime();
    if (project.measured && nowMs - project.measured.atMs < MEASURED_LAG_REUSE_MS) return project.measured.lag;
    project.measuring ??= this.measure(projectId, project, nowMs).finally(() => (project.measuring = undefined));
    return project.measuring;
  }

  private async measure(projectId: string, project: ProjectLag, nowMs: number): Promise<Lag> {
    // Events admitted while the measurement runs stay counted: the measurement may or may not hold them.
    const admittedBefore = project.admitted;
    const lag = await this.options.lag.ofProject(projectId);
    project.admitted -= admittedBefore;
    project.measured = { atMs: nowMs, lag };
    return lag;
  }
}

/** A project's last measured lag, and the events this instance admitted that it may not hold yet. */
interface ProjectLag {
  measured?: { atMs: number; lag: Lag };
  measuring?: Promise<Lag>;
  admitted: number;
}
