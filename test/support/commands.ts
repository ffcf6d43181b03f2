import type { CommandStartedEvent, MongoClient } from "mongodb";

/** The queue's own traffic: the apply worker's polling and lease, which runs whatever the request. */
const BACKGROUND = new Set(["event_queues", "event_segments", "event_workers", "instance_lease"]);
const HANDSHAKES = new Set(["hello", "isMaster", "ping", "endSessions"]);

/** The commands `client` starts during `call`, in order. */
export async function startedDuring(client: MongoClient, call: () => Promise<unknown>): Promise<CommandStartedEvent[]> {
  const started: CommandStartedEvent[] = [];
  const onStarted = (event: CommandStartedEvent) => void started.push(event);
  client.on("commandStarted", onStarted);
  try {
    await call();
  } finally {
    client.off("commandStarted", onStarted);
  }
  return started;
}

/**
 * The database commands `client` sends during `call`, as `<command> <collection>`, in order; with `background`,
 * the apply worker's queue traffic too (for a count that includes applying events).
 */
export async function commandsOf(
  client: MongoClient,
  call: () => Promise<unknown>,
  { background = false } = {},
): Promise<string[]> {
  return (await startedDuring(client, call)).flatMap((event) => {
    const collection = String(event.command[event.commandName] ?? "");
    if ((!background && BACKGROUND.has(collection)) || HANDSHAKES.has(event.commandName)) return [];
    return [`${event.commandName} ${collection}`];
  });
}
