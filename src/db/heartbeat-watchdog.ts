import { setTimeout as delay } from "node:timers/promises";
import type { MongoClient, ServerHeartbeatStartedEvent } from "mongodb";
import type { Logger } from "../log.js";

export interface HeartbeatWatchdogOptions {
  /** A heartbeat outstanding this long is stuck: a live one ends within its connect and hello deadlines. */
  stuckAfterMs: number;
  /** The client's heartbeatFrequencyMS: a streaming (awaited) heartbeat may wait that long on top. */
  heartbeatFrequencyMs?: number;
  log?: Logger;
}

export interface HeartbeatWatchdog {
  /** Stops watching and waits for a reconnect under way, so the owner's close is the last word. */
  stop(): Promise<void>;
}

/**
 * Reconnects `client` when one of its server monitors hangs. The driver (7.x)
 * can start a heartbeat on its monitoring connection in the moment between the
 * socket's destruction (the database closed it) and the socket's "close" event:
 * the write to the dead socket then waits for a "drain" that never comes, with
 * no timeout. The monitor never checks again, the server stays Unknown and
 * every operation fails server selection for as long as the process lives,
 * though the database is back. Closing the client and connecting it again
 * starts fresh monitors; the Db handles the stores hold keep working.
 */
export function watchHeartbeats(
  client: MongoClient,
  { stuckAfterMs, heartbeatFrequencyMs = 10_000, log }: HeartbeatWatchdogOptions,
): HeartbeatWatchdog {
  const outstanding = new Map<string, NodeJS.Timeout>();
  const stopped = new AbortController();
  let reconnecting: Promise<void> | undefined;
  let closingItself = false;

  const settle = ({ connectionId }: { connectionId: string }) => {
    clearTimeout(outstanding.get(connectionId));
    outstanding.delete(connectionId);
  };
  const onStarted = ({ connectionId, awaited }: ServerHeartbeatStartedEvent) => {
    settle({ connectionId });
    const limit = awaited ? stuckAfterMs + heartbeatFrequencyMs : stuckAfterMs;
    const timer = setTimeout(() => {
      outstanding.delete(connectionId);
      if (!reconnecting && !stopped.signal.aborted)
        reconnecting = reconnect(connectionId).finally(() => (reconnecting = undefined));
    }, limit);
    timer.unref();
    outstanding.set(connectionId, timer);
  };

  async function reconnect(address: string): Promise<void> {
    log?.warn({ address, stuckAfterMs }, "database monitor stuck; reconnecting the client");
    closingItself = true;
    await client.close().catch(() => undefined);
    closingItself = false;
    for (let attempt = 1; !stopped.signal.aborted; attempt++) {
      try {
        await client.connect();
        log?.info({ address, attempt }, "database client reconnected");
        return;
      } catch {
        // The database is still away: try again, as the monitor would have.
        await delay(Math.min(stuckAfterMs, 500 * attempt), undefined, { signal: stopped.signal }).catch(() => {});
      }
    }
  }

  const detach = () => {
    stopped.abort();
    client.off("serverHeartbeatStarted", onStarted);
    client.off("serverHeartbeatSucceeded", settle);
    client.off("serverHeartbeatFailed", settle);
    client.off("topologyClosed", onClosed);
    for (const timer of outstanding.values()) clearTimeout(timer);
    outstanding.clear();
  };
  // A client its owner closed stays closed: its last heartbeat never ends, and must not look stuck.
  const onClosed = () => {
    if (!closingItself) detach();
  };

  client.on("serverHeartbeatStarted", onStarted);
  client.on("serverHeartbeatSucceeded", settle);
  client.on("serverHeartbeatFailed", settle);
  client.on("topologyClosed", onClosed);
  return {
    async stop() {
      detach();
      await reconnecting;
    },
  };
}
