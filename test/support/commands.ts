import type { CommandStartedEvent } from "mongodb";
import type { TestService } from "./service.js";

/** The queue's own traffic: the apply worker's polling and lease, which runs whatever the request. */
const BACKGROUND = new Set(["event_queue", "event_segments", "event_plans", "instance_lease"]);
const HANDSHAKES = new Set(["hello", "isMaster", "ping", "endSessions"]);

/**
 * The database commands `svc` sends during `call`, as `<command> <collection>`; with `background`, the apply
 * worker's queue traffic too (for a count that includes applying events).
 */
export async function commandsOf(
  svc: TestService,
  call: () => Promise<unknown>,
  { background = false } = {},
): Promise<string[]> {
  const commands: string[] = [];
  const onStarted = (event: CommandStartedEvent) => {
    const collection = String(event.command[event.commandName] ?? "");
    if ((!background && BACKGROUND.has(collection)) || HANDSHAKES.has(event.commandName)) return;
    commands.push(`${event.commandName} ${collection}`);
  };
  svc.database.client.on("commandStarted", onStarted);
  try {
    await call();
  } finally {
    svc.database.client.off("commandStarted", onStarted);
  }
  return commands;
}
