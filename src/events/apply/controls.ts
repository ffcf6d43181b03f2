import type { PlayerNumbers } from "../../sets/player-numbers.js";
import type { Step } from "../../steps.js";
import { markOf, type ActivityStore, type DayName } from "../activity/activity-store.js";
import type { RawEventStore } from "../activity/raw-event-store.js";
import type { FoldMove } from "../queue/segment-store.js";

export interface ControlDeps {
  numbers: PlayerNumbers;
  activity: ActivityStore;
  raw: RawEventStore;
}

/**
 * A fold carried out (queue segment `seq`), move by move: the folded player's activity joins the player's (`move`),
 * then its keys point at the player's number (`point`): their events queued before or after are the player's. Run
 * again after a crash, a chunk that took the move in already is left alone, and the keys pointed already move nothing.
 */
export async function carryOutFold(
  deps: ControlDeps,
  step: Step,
  { projectId, seq, moves, days }: { projectId: string; seq: number; moves: readonly FoldMove[]; days: string[] },
): Promise<void> {
  for (const [index, { from, into }] of moves.entries()) {
    const target = (await step("numbers", () => deps.numbers.assign(projectId, [into]))).get(into)!;
    const source = (await deps.numbers.find(projectId, from.slice(0, 1))).get(from[0]);
    if (source !== undefined && source !== target) {
      await step("move", async () => {
        const pairs = await deps.activity.pairsOf(projectId, source, days);
        await deps.activity.move(projectId, markOf(seq, index), source, target, pairs);
      });
    }
    await step("point", () => deps.numbers.point(projectId, from, target));
  }
}

/**
 * An erasure carried out (queue segment `seq`): the players' activity taken out of every set (`activity`), their raw
 * events deleted (`raw`), and their keys' numbers retired (`numbers`): their next events make new players.
 */
export async function carryOutErasure(
  deps: ControlDeps,
  step: Step,
  { projectId, seq, identityKeys, days }: { projectId: string; seq: number; identityKeys: string[]; days: string[] },
): Promise<void> {
  const numbers = new Set((await deps.numbers.find(projectId, identityKeys)).values());
  const pairs = new Map<number, DayName[]>();
  await step("activity", async () => {
    for (const number of numbers) pairs.set(number, await deps.activity.pairsOf(projectId, number, days));
    await deps.activity.erase(projectId, markOf(seq, 0), pairs);
  });
  const active = [...new Set([...pairs.values()].flatMap((list) => list.map(({ day }) => day)))];
  await step("raw", () => deps.raw.deleteOf(projectId, identityKeys, active));
  await step("numbers", () => deps.numbers.retire(projectId, identityKeys));
}
