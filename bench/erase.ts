import { setTimeout as delay } from "node:timers/promises";
import { performance } from "node:perf_hooks";
import type { CommandStartedEvent } from "mongodb";
import { createBenchProject, postJson, queueOf, round, startBenchService, type BenchService } from "./parts/support.js";

/**
 * Issue 34's figure: one players/delete of a player with BENCH_ERASE_EVENTS events (1,000 by default) in a project
 * of BENCH_ERASE_PLAYERS players (100,000 by default, each with a profile and one event), beside a players/update of
 * that player: each call's time, the database commands sent while it ran (the apply worker's included: it starts on
 * the erasure's segment at once), and for the delete the time and commands until the worker took the player out
 * (their raw events gone from the queue's segments).
 */
const PLAYERS = Number(process.env.BENCH_ERASE_PLAYERS ?? 100_000);
const EVENTS = Number(process.env.BENCH_ERASE_EVENTS ?? 1_000);
const BATCH = 1_000;
const TARGET = "erase-me";

export default async function eraseBench() {
  const bench = await startBenchService({ DB_TIMEOUT_MS: "10000" });
  try {
    const project = await createBenchProject(bench, 34_001);
    const post = (path: string, body: object, key = project.privateKey) => postJson(bench, path, key, body);
    const timestamp = new Date(Date.now() - 3_600_000).toISOString();
    for (let from = 0; from < PLAYERS; from += 100) {
      const players = Array.from({ length: Math.min(100, PLAYERS - from) }, (_, k) => ({
        partner_user_id: `p-${from + k}`,
        tags: [`t${(from + k) % 10}`],
      }));
      await post("/v1/players/update", { players });
    }
    await post("/v1/players/update", { players: [{ partner_user_id: TARGET, tags: ["t0", "vip"], device_id: "d-1" }] });
    for (let from = 0; from < PLAYERS; from += BATCH) {
      const events = Array.from({ length: Math.min(BATCH, PLAYERS - from) }, (_, k) => ({
        name: "play",
        partner_user_id: `p-${from + k}`,
        timestamp,
      }));
      await post("/v1/events", { events }, project.publicKey);
    }
    for (let from = 0; from < EVENTS; from += BATCH) {
      const events = Array.from({ length: Math.min(BATCH, EVENTS - from) }, (_, k) => ({
        name: (from + k) % 2 === 0 ? "play" : "buy",
        partner_user_id: TARGET,
        timestamp,
      }));
      await post("/v1/events", { events }, project.publicKey);
    }
    await drained(bench);

    const update = await timed(bench, () =>
      post("/v1/players/update", { players: [{ partner_user_id: TARGET, tags_add: ["whale"] }] }),
    );
    await drained(bench);
    const commands = watch(bench);
    const started = performance.now();
    const erased = await post("/v1/players/delete", { partner_user_id: TARGET });
    const answered = performance.now();
    const call = commands.take();
    // players/data's NDJSON is its first line alone once no raw event of the player is kept.
    const dataLines = async () => {
      const res = await fetch(`${bench.baseUrl}/v1/players/data`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": project.privateKey },
        body: JSON.stringify({ partner_user_id: TARGET }),
      });
      return (await res.text()).trimEnd().split("\n").length;
    };
    while ((await dataLines()) > 1) await delay(20);
    const behind = commands.take();
    commands.stop();
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      players: PLAYERS,
      player_events: EVENTS,
      update: update,
      delete: {
        deleted: erased.deleted,
        call_ms: round(answered - started, 2),
        call_commands: call,
        until_raw_events_gone_ms: round(performance.now() - started, 1),
        behind_commands: behind,
      },
    };
  } finally {
    await bench.stop();
  }
}

async function drained(bench: BenchService): Promise<void> {
  while ((await queueOf(bench)).queue_depth !== 0) await delay(50);
}

/** The call's time and the commands sent while it ran. */
async function timed(bench: BenchService, call: () => Promise<unknown>) {
  const commands = watch(bench);
  const started = performance.now();
  await call();
  const ms = performance.now() - started;
  const sent = commands.take();
  commands.stop();
  return { call_ms: round(ms, 2), call_commands: sent };
}

/** Counts the commands sent, by command and collection, since the last `take`. */
function watch(bench: BenchService) {
  let counts = new Map<string, number>();
  const { client } = bench.database;
  const onStarted = (event: CommandStartedEvent) => {
    const name = `${event.commandName} ${String(event.command[event.commandName] ?? "")}`;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  };
  client.on("commandStarted", onStarted);
  return {
    take: () => {
      const taken = Object.fromEntries([...counts].sort(([a], [b]) => (a < b ? -1 : 1)));
      counts = new Map();
      return taken;
    },
    stop: () => client.off("commandStarted", onStarted),
  };
}
