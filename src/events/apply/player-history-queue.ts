import { playerChange, type HistoryFollower, type WrittenProfile } from "../../players/rounds/written-profiles.js";
import type { QueueWriter } from "../queue/queue-writer.js";

/**
 * How event histories follow the players' writes: the players write path's
 * HistoryFollower. It needs only the queue, not the players, so it exists
 * before them (src/server/calls/capabilities.ts).
 */
export class PlayerHistoryQueue implements HistoryFollower {
  constructor(private readonly options: { writer: QueueWriter }) {}

  /**
   * After each round of profile writes (updates, and the folds of verifies and
   * linked devices) and its membership: the written players' histories follow
   * their tags and traits as of now, and a folded profile's history moves to
   * the player it was folded into. One queue segment, in order with the
   * events, settling the players recorded under `recorded` once applied. Idempotent.
   */
  async queue(projectId: string, written: readonly WrittenProfile[], recorded: string | null): Promise<void> {
    if (written.length === 0) return;
    const { identityKeys, folds } = playerChange(written, []);
    const work = { kind: "resync" as const, identityKeys, folds, ...(recorded && { change: recorded }) };
    await this.options.writer.enqueue(projectId, work, 0, new Date(0));
  }

  async erase(projectId: string, identityKeys: readonly string[]): Promise<number> {
    const work = { kind: "resync" as const, identityKeys: [], erased: [...identityKeys] };
    return this.options.writer.enqueue(projectId, work, 0, new Date(0));
  }
}
