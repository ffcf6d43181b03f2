import { performance } from "node:perf_hooks";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { whenEnded } from "./call-end.js";
import { callerKey } from "./caller.js";

export interface StreamBounds {
  /** Server streams (players/export, players/data) one API key may have open at once. */
  perKey: number;
  /** Server streams of one project open at once, whatever its keys. */
  perProject: number;
}

/** Retry-After of a stream refused for its bound: a whole export of a large project takes seconds, a small one less. */
const STREAM_RETRY_AFTER_SECONDS = 5;

/**
 * How long the streams together run before the event loop serves its I/O again. A stream's messages come from
 * memory (the owner's profiles) or a batch already read, and a client on a fast link takes every write at once: left
 * alone, an export of 20,000 profiles ran 0.6 s without a pause, and ten of them held a get of their project for
 * seconds (bench/README.md, `exports`).
 */
const TURN_MS = 1;

/**
 * Takes turns for the server streams of the process: they run together for TURN_MS, then one waits for the next
 * turn of the event loop (setImmediate: after its I/O) and the others behind it, in arrival order, one turn each.
 */
class StreamTurns {
  private turnStarted = 0;
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  /** Resolves at once within the running turn, else when this caller's turn comes. */
  async take(): Promise<void> {
    if (performance.now() - this.turnStarted < TURN_MS) return;
    await new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.turnStarted = performance.now();
      this.waiting.shift()?.();
      if (this.waiting.length > 0) this.schedule();
    });
  }
}

/**
 * Server streams share: at most `perKey` open at once per API key and `perProject` per project (a newcomer past
 * either is refused, resource_exhausted with Retry-After: 429), and each message waits for its turn of the event
 * loop (StreamTurns), so a stream never holds back the calls of its project, or any other. A stream's place is
 * given back when it ends, fails or its client goes away.
 */
export function streamsInterceptor(bounds: StreamBounds): Interceptor {
  const open = new Map<string, number>();
  const turns = new StreamTurns();
  const count = (key: string, by: number) => {
    const now = (open.get(key) ?? 0) + by;
    if (now === 0) open.delete(key);
    else open.set(key, now);
  };
  return (next) => async (req) => {
    const caller = req.contextValues.get(callerKey);
    if (req.method.methodKind !== "server_streaming" || !caller) return next(req);
    const places = [`key:${caller.keyId}`, ...(caller.projectId === null ? [] : [`project:${caller.projectId}`])];
    if ((open.get(places[0]) ?? 0) >= bounds.perKey) {
      throw refused(`streams: at most ${bounds.perKey} players/export or players/data streams at once per API key`);
    }
    if (places.length > 1 && (open.get(places[1]) ?? 0) >= bounds.perProject) {
      throw refused(`streams: at most ${bounds.perProject} players/export or players/data streams at once per project`);
    }
    for (const place of places) count(place, 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const place of places) count(place, -1);
    };
    // A client that goes away aborts the call's signal: its stream, waiting for the socket to take a line, ends no other way.
    req.signal.addEventListener("abort", release, { once: true });
    try {
      const res = await next(req);
      return res.stream ? whenEnded({ ...res, message: paced(res.message, turns) }, release) : res;
    } catch (error) {
      release();
      throw error;
    }
  };
}

async function* paced<M>(messages: AsyncIterable<M>, turns: StreamTurns): AsyncGenerator<M> {
  for await (const message of messages) {
    await turns.take();
    yield message;
  }
}

function refused(message: string): ConnectError {
  return new ConnectError(message, Code.ResourceExhausted, { "retry-after": String(STREAM_RETRY_AFTER_SECONDS) });
}
