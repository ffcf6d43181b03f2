import { performance } from "node:perf_hooks";
import type { CommandStartedEvent, CommandSucceededEvent } from "mongodb";
import { generate, load } from "./events.js";
import { round, startBenchService, type BenchService } from "./parts/support.js";

/**
 * Issue 13's tag-change figure alone (part 4 of `npm run bench -- events`,
 * without the ingestion and trends parts before it): the events bench's
 * generated data (BENCH_EVENTS_PLAYERS, 20,000 by default), then a new tag
 * added to each player with 30 active days, the call timed by the load
 * generator in a process of its own. Next to it, what the call's commands
 * took in the same run: each command's count and p50 (the apply worker's own left out).
 */
export default async function tagChangeBench() {
  const bench = await startBenchService({ DB_TIMEOUT_MS: "10000" });
  try {
    const started = performance.now();
    const g = await generate(bench);
    const generated = round((performance.now() - started) / 1000);
    const commands = watch(bench);
    const result = await load({
      kind: "tag-change",
      baseUrl: bench.baseUrl,
      publicKey: g.publicKey,
      privateKey: g.privateKey,
      players: g.dailyPlayers,
      range: { from: g.from, to: g.to },
    });
    commands.stop();
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      generated_seconds: generated,
      ...result,
      commands: commands.summary(),
    };
  } finally {
    await bench.stop();
  }
}

/** The players write path's commands and the resync segment's (the apply worker's own reads and writes left out). */
const OF_THE_CALL =
  /^(find player_profiles|find player_tags|.* player_registry_counters|insert player_tags|update player_profiles|update player_tag_members|findAndModify event_queue|insert event_segments|update player_changes)$/;

function watch(bench: BenchService) {
  const names = new Map<number, { name: string; at: number }>();
  const durations = new Map<string, number[]>();
  const { client } = bench.database;
  const onStarted = (event: CommandStartedEvent) => {
    const name = `${event.commandName} ${String(event.command[event.commandName] ?? "")}`;
    if (OF_THE_CALL.test(name)) names.set(event.requestId, { name, at: performance.now() });
  };
  const onSucceeded = (event: CommandSucceededEvent) => {
    const sent = names.get(event.requestId);
    if (!sent) return;
    names.delete(event.requestId);
    durations.set(sent.name, [...(durations.get(sent.name) ?? []), performance.now() - sent.at]);
  };
  client.on("commandStarted", onStarted).on("commandSucceeded", onSucceeded);
  return {
    stop: () => client.off("commandStarted", onStarted).off("commandSucceeded", onSucceeded),
    summary: () =>
      Object.fromEntries(
        [...durations].map(([name, ms]) => {
          ms.sort((a, b) => a - b);
          return [name, { count: ms.length, p50_ms: round(ms[Math.floor(ms.length / 2)], 2) }];
        }),
      ),
  };
}
