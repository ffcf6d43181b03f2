// What the players bench watches the service send while its load runs (bench/players.ts): write commands and their
// statements, and what each write of the players' sets and trait columns costs the engine.
import {
  BSON,
  MongoClient,
  type CommandFailedEvent,
  type CommandStartedEvent,
  type CommandSucceededEvent,
} from "mongodb";
import { round, type BenchService } from "./support.js";

/**
 * What the service sends while the load runs: write commands and statements (what an update costs the
 * database), finds, and per command name the slowest reply and the failures (what a 503 came from).
 */
export function countWrites(bench: BenchService) {
  const counts = { commands: 0, statements: 0, reads: 0 };
  const byCommand: Record<string, { count: number; max_ms: number; failed: number; max_statements: number }> = {};
  const statementsOf = new Map<number, number>();
  const entry = (name: string) => (byCommand[name] ??= { count: 0, max_ms: 0, failed: 0, max_statements: 0 });
  const started = (event: CommandStartedEvent) => {
    const list = event.command.updates ?? event.command.documents ?? event.command.deletes;
    if (Array.isArray(list)) {
      counts.commands++;
      counts.statements += list.length;
      statementsOf.set(event.requestId, list.length);
    } else if (event.commandName === "find") counts.reads++;
  };
  const ended = (failed: boolean) => (event: CommandSucceededEvent | CommandFailedEvent) => {
    const stats = entry(event.commandName);
    stats.count++;
    stats.max_ms = Math.max(stats.max_ms, round(event.duration));
    stats.max_statements = Math.max(stats.max_statements, statementsOf.get(event.requestId) ?? 0);
    statementsOf.delete(event.requestId);
    if (failed) stats.failed++;
  };
  const [succeeded, failed] = [ended(false), ended(true)];
  const { client } = bench.database;
  client.on("commandStarted", started).on("commandSucceeded", succeeded).on("commandFailed", failed);
  return {
    counts,
    byCommand,
    stop: () => client.off("commandStarted", started).off("commandSucceeded", succeeded).off("commandFailed", failed),
  };
}

/**
 * What each `update` of the players' sets (player_sets) and trait columns costs the engine, per collection and
 * project (`small`, the writer's, and `large`): FerretDB replaces a whole document for any update, so the bytes it
 * rewrites are the sizes of the documents a command touches, read right after it (by a client of its own), beside
 * the bytes the driver sent.
 */
export function rewrittenByUpdates(bench: BenchService, projects: Record<string, string>) {
  const reader = new MongoClient(bench.databaseUri);
  const db = reader.db(bench.database.db.databaseName);
  const sent = new Map<number, { collection: string; ids: string[]; bytes: number }>();
  const figures = new Map<string, { calls: number; sent: number; rewritten: number; maxRewritten: number }>();
  const reads: Promise<void>[] = [];
  let unread = 0;
  const started = (event: CommandStartedEvent) => {
    const collection = String(event.command.update);
    if (event.commandName !== "update" || !REWRITTEN.has(collection)) return;
    const ids = event.command.updates.map((statement: { q: { _id: string } }) => String(statement.q._id));
    sent.set(event.requestId, { collection, ids, bytes: BSON.calculateObjectSize(event.command) });
  };
  const succeeded = (event: CommandSucceededEvent) => {
    const command = sent.get(event.requestId);
    if (!command) return;
    sent.delete(event.requestId);
    const project = projects[command.ids[0].slice(0, command.ids[0].indexOf("/"))];
    if (!project) return;
    const key = `${command.collection} ${project}`;
    // By `_id` one at a time: FerretDB scans a whole collection for `$in`, and the sets' are large.
    const docs = db.collection<{ _id: string }>(command.collection);
    reads.push(
      Promise.all(command.ids.map((_id) => docs.findOne({ _id }))).then(
        (found) => {
          const rewritten = found.reduce((bytes, doc) => bytes + (doc ? BSON.calculateObjectSize(doc) : 0), 0);
          const known = figures.get(key) ?? { calls: 0, sent: 0, rewritten: 0, maxRewritten: 0 };
          figures.set(key, {
            calls: known.calls + 1,
            sent: known.sent + command.bytes,
            rewritten: known.rewritten + rewritten,
            maxRewritten: Math.max(known.maxRewritten, rewritten),
          });
        },
        // A read that failed under load leaves its command out of the figures, and is counted.
        () => void (unread += 1),
      ),
    );
  };
  const { client } = bench.database;
  client.on("commandStarted", started).on("commandSucceeded", succeeded);
  return async () => {
    client.off("commandStarted", started).off("commandSucceeded", succeeded);
    await Promise.all(reads);
    await reader.close();
    return {
      ...Object.fromEntries(
        [...figures].sort().map(([key, { calls, sent, rewritten, maxRewritten }]) => [
          key,
          {
            commands: calls,
            sent_bytes_per_command: Math.round(sent / calls),
            rewritten_bytes_per_command: Math.round(rewritten / calls),
            max_rewritten_bytes: maxRewritten,
          },
        ]),
      ),
      ...(unread > 0 && { commands_not_read_back: unread }),
    };
  };
}

const REWRITTEN = new Set(["player_sets", "player_trait_columns"]);
