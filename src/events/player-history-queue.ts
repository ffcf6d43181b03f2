import type { Clock } from "../clock.js";
import type { HistoryFollower, WrittenProfile } from "../players/written-profiles.js";
import type { PlayerChange, PlayerChangeStore } from "./player-change-store.js";
import type { QueueWriter } from "./queue-writer.js";

/**
 * How event histories follow the players' writes: the players write path's
 * HistoryFollower. It needs only the queue, not the players, so it exists
 * before them (src/server/capabilities.ts).
 */
export class PlayerHistoryQueue implements HistoryFollower {
  constructor(private readonly options: { changes: PlayerChangeStore; writer: QueueWriter; clock: Clock }) {}

  /**
   * The first hook of a players round, before it writes anything: records the
   * change (what `queue` will queue), so that every chart counts the players
   * as of now from the moment the round's writes land, whatever the worker has
   * done. Null when the round moves no history.
   */
  async record(projectId: string, written: readonly WrittenProfile[]): Promise<string | null> {
    const change = playerChange(written);
    if (change.identityKeys.length === 0 && change.folds.length === 0) return null;
    return this.options.changes.record(projectId, change, this.options.clock.now());
  }

  /**
   * After each round of profile writes (updates, and the folds of verifies and
   * linked devices): the written players' histories follow their tags and
   * traits as of now, and a folded profile's history moves to the player it
   * was folded into. One queue segment, in order with the events, settling the
   * recorded change once applied. Idempotent.
   */
  async queue(projectId: string, written: readonly WrittenProfile[], recorded: string | null): Promise<void> {
    if (written.length === 0) return;
    const work = { kind: "resync" as const, ...playerChange(written), ...(recorded && { change: recorded }) };
    await this.options.writer.enqueue(projectId, work, 0, new Date(0));
  }
}

/** The players whose cohorts changed (a history follows them) and the folds, of a round's written profiles. */
function playerChange(written: readonly WrittenProfile[]): PlayerChange {
  const identityKeys = [...new Set(written.filter((one) => one.foldedInto === null).map((one) => one.identityKey))];
  const folds = written.flatMap(({ identityKey, foldedInto }) =>
    foldedInto === null ? [] : [{ from: identityKey, into: foldedInto }],
  );
  return { identityKeys, folds };
}
