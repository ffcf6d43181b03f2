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

  /** Says `id` is alive until `until`; answers the workers alive at `now` (itself among them). */
  async heartbeat(id: string, now: Date, until: Date): Promise<string[]> {
    await this.docs.replaceOne({ _id: id }, { until }, { upsert: true });
    // A handful of documents, one an instance: read whole.
    const alive = (await this.docs.find({}).toArray()).filter((doc) => doc.until > now).map((doc) => doc._id);
    return alive.includes(id) ? alive : [...alive, id];
  }

  async leave(id: string): Promise<void> {
    await this.docs.deleteOne({ _id: id });
  }
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
