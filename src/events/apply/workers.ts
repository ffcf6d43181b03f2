import { createHash } from "node:crypto";
import type { Db } from "mongodb";

interface WorkerDoc {
  _id: string;
  /** Alive until then, unless it says so again. */
  until: Date;
}

/**
 * The apply workers alive (`event_workers`, one document an instance whose worker is on, renewed each pass, expiring
 * by a TTL index where the server has one) and how the projects' queues are shared among them: each project goes to
 * the live worker whose hash with it is highest (rendezvous hashing), so shares are even, a new worker takes its
 * share from every other, and a dead one's share spreads over the rest, with no coordination but the list.
 */
export class WorkerRegistry {
  private readonly docs;

  constructor(db: Db) {
    this.docs = db.collection<WorkerDoc>("event_workers");
  }

  async createIndexes(ttl: boolean): Promise<void> {
    if (ttl) await this.docs.createIndex({ until: 1 }, { expireAfterSeconds: 0 });
  }

  /** Says `id` is alive until `until`; answers every worker listed (a dead one's time passes, unrenewed). */
  async heartbeat(id: string, until: Date): Promise<ListedWorker[]> {
    await this.docs.replaceOne({ _id: id }, { until }, { upsert: true });
    // A handful of documents, one an instance: read whole.
    return (await this.docs.find({}).toArray()).map((doc) => ({ id: doc._id, until: doc.until }));
  }

  async leave(id: string): Promise<void> {
    await this.docs.deleteOne({ _id: id });
  }
}

/** A worker as the registry listed it: alive until `until`, unless it said so again since. */
export interface ListedWorker {
  id: string;
  until: Date;
}

/**
 * The workers alive at `now` (`self` among them), each judged by its own time, not by when the list was read: a dead
 * one's share is taken as soon as its time passes.
 */
export function aliveAt(listed: readonly ListedWorker[], now: Date, self: string): string[] {
  const alive = listed.filter((worker) => worker.until > now).map((worker) => worker.id);
  return alive.includes(self) ? alive : [...alive, self];
}

/** The worker of `alive` that a project's queue belongs to. */
export function ownerOf(projectId: string, alive: readonly string[]): string {
  let best = "";
  let bestScore = -1;
  for (const worker of alive) {
    const score = createHash("sha1").update(`${projectId}\u0000${worker}`).digest().readUInt32BE(0);
    if (score > bestScore || (score === bestScore && worker < best)) [best, bestScore] = [worker, score];
  }
  return best;
}
