import { once } from "node:events";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { systemClock, type Clock } from "../../clock.js";
import { ConnectionPool, type PooledConnection } from "./connection-pool.js";
import type { NodeHandler } from "./node-types.js";

/** How long a close waits for requests in flight before it cuts their connections. */
export const CLOSE_GRACE_MS = 10_000;

export interface ListenerOptions {
  /** A connection must send a request's headers (HTTP/2: open its first stream) this long after connecting. */
  headersTimeoutMs: number;
  /** A request's headers and body must have arrived this long after its first byte (HTTP/2: its stream opened). */
  requestTimeoutMs: number;
  /** A connection with no request in flight is closed after this long. */
  idleTimeoutMs: number;
  /** Concurrent connections; see ConnectionPool for what happens at the cap. */
  maxConnections: number;
  /** Real time by default: these are socket timeouts, not the service clock that tests move. */
  clock?: Clock;
}

export interface Listener {
  /** The port actually bound (useful with port 0). */
  port: number;
  /**
   * Stops accepting connections, lets in-flight requests finish, then closes
   * every connection; whatever is still open after `graceMs` is cut.
   */
  close(graceMs?: number): Promise<void>;
}

// Every HTTP/2 cleartext connection starts with this preface; no HTTP/1.x request line does.
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

type Pool = ConnectionPool<ClientConnection>;

/** One client connection: a raw socket until its first bytes tell HTTP/2 from HTTP/1.1. */
class ClientConnection implements PooledConnection {
  session: http2.ServerHttp2Session | undefined;

  constructor(readonly socket: net.Socket) {}

  close(): void {
    // destroy() still sends GOAWAY, but does not wait for a peer that may never close its end.
    if (this.session) this.session.destroy();
    else this.socket.destroySoon();
  }
}

/** One of the two protocols served on the port. */
interface Protocol {
  /** Takes over a connection whose first bytes chose this protocol. */
  handOver(connection: ClientConnection): void;
  /** Shutdown: requests in flight finish, their connections then close; idle ones close now. */
  drain(): void;
}

/** Another process listens on the configured port. */
export class PortInUseError extends Error {
  override name = "PortInUseError";
  constructor(port: number) {
    super(`PORT ${port} is in use by another process: stop it, or set PORT to a free port`);
  }
}

/** A port bound and not served yet: until a listener serves it, every connection is closed at once. */
export interface BoundPort {
  /** The port actually bound (useful with port 0). */
  port: number;
  /** Hands each connection from now on to `accept`. */
  serve(accept: (socket: net.Socket) => void): void;
  /** Stops accepting connections; resolves once the port is free. */
  close(): Promise<void>;
}

/**
 * Binds the service's port. `npm start` binds it before anything else starts, so a port another process holds
 * refuses the start before a database starts or a directory is made.
 */
export async function bindPort(port: number, host: string): Promise<BoundPort> {
  let accept = (socket: net.Socket): void => void socket.destroy();
  const server = net.createServer((socket) => accept(socket));
  server.listen(port, host);
  try {
    await once(server, "listening");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") throw new PortInUseError(port);
    throw error;
  }
  return {
    port: (server.address() as net.AddressInfo).port,
    serve(next) {
      accept = next;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * Serves HTTP/1.1 and cleartext HTTP/2 on a bound port. Node's cleartext http2
 * server cannot fall back to HTTP/1.1, so each connection is handed to one of
 * two servers by its first bytes. Every phase of a connection has a deadline,
 * so a client cannot hold one open by sending slowly or not at all.
 */
export function listen(handler: NodeHandler, bound: BoundPort, options: ListenerOptions): Listener {
  const checkEveryMs = Math.min(1_000, options.headersTimeoutMs / 4);
  const pool = new ConnectionPool<ClientConnection>({
    maxConnections: options.maxConnections,
    // Two checks later than Node's own header check, so that an HTTP/1.1 client gets its 408 first: Node's
    // clock starts at the first byte it parses, ours at admission, and both checks fire on the same ticks.
    firstRequestTimeoutMs: options.headersTimeoutMs + 2 * checkEveryMs,
    idleTimeoutMs: options.idleTimeoutMs,
    clock: options.clock ?? systemClock,
  });
  const sweeper = setInterval(() => pool.sweep(), checkEveryMs).unref();
  const h1 = http1(handler, options, pool, checkEveryMs);
  const h2 = http2Cleartext(handler, options, pool);

  const sockets = new Set<net.Socket>();
  bound.serve((socket) => {
    socket.on("error", () => socket.destroy());
    const connection = new ClientConnection(socket);
    if (!pool.admit(connection)) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      pool.remove(connection);
    });
    dispatchByPreface(socket, (isH2) => (isH2 ? h2 : h1).handOver(connection));
  });

  return {
    port: bound.port,
    async close(graceMs = CLOSE_GRACE_MS) {
      const stopped = bound.close();
      const open = [...sockets];
      pool.drain();
      h1.drain();
      h2.drain();
      const deadline = setTimeout(() => open.forEach((socket) => socket.destroy()), graceMs);
      await Promise.all(open.map(closed));
      clearTimeout(deadline);
      clearInterval(sweeper);
      await stopped;
    },
  };
}

function http1(handler: NodeHandler, options: ListenerOptions, pool: Pool, checkEveryMs: number): Protocol {
  let draining = false;
  const connectionOf = new WeakMap<net.Socket, ClientConnection>();
  const responses = new Set<http.ServerResponse>();
  const server = http.createServer(
    {
      headersTimeout: options.headersTimeoutMs,
      requestTimeout: options.requestTimeoutMs,
      keepAliveTimeout: options.idleTimeoutMs,
      connectionsCheckingInterval: checkEveryMs,
    },
    (req, res) => {
      const connection = connectionOf.get(req.socket)!;
      pool.requestStarted(connection);
      responses.add(res);
      res.once("close", () => {
        responses.delete(res);
        pool.requestFinished(connection);
      });
      if (draining) res.setHeader("connection", "close");
      handler(req, res);
    },
  );
  // Node enforces headersTimeout and requestTimeout (answering 408) only for a server that has
  // emitted "listening"; this one never listens itself, it is handed its connections.
  server.emit("listening");
  return {
    handOver(connection) {
      connectionOf.set(connection.socket, connection);
      server.emit("connection", connection.socket);
    },
    drain() {
      draining = true;
      for (const res of responses) if (!res.headersSent) res.setHeader("connection", "close");
      // Node spares the connections whose next request has begun.
      server.closeIdleConnections();
    },
  };
}

function http2Cleartext(handler: NodeHandler, options: ListenerOptions, pool: Pool): Protocol {
  let draining = false;
  let handingOver: ClientConnection | undefined;
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer(handler);
  server.on("session", (session) => {
    // Emitted synchronously while a connection is handed over, so this is its connection.
    const connection = handingOver!;
    connection.session = session;
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    session.on("stream", (stream) => {
      pool.requestStarted(connection);
      const deadline = setTimeout(() => cutUnlessReceived(stream), options.requestTimeoutMs);
      stream.once("close", () => {
        clearTimeout(deadline);
        pool.requestFinished(connection);
      });
    });
    if (draining) session.close();
  });
  return {
    handOver(connection) {
      handingOver = connection;
      server.emit("connection", connection.socket);
      handingOver = undefined;
    },
    drain() {
      draining = true;
      // GOAWAY: each session finishes its streams, then closes.
      for (const session of sessions) session.close();
    },
  };
}

/** Resolves when the socket has closed, whatever error it closed with. */
function closed(socket: net.Socket): Promise<void> {
  return socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once("close", () => resolve()));
}

/** Resets an HTTP/2 stream whose request has not fully arrived (the client is still sending). */
function cutUnlessReceived(stream: http2.ServerHttp2Stream): void {
  if (!stream.closed && !stream.state.remoteClose) stream.close(http2.constants.NGHTTP2_CANCEL);
}

function dispatchByPreface(socket: net.Socket, dispatch: (isH2: boolean) => void): void {
  const chunks: Buffer[] = [];
  const onReadable = () => {
    let chunk: Buffer | null;
    while ((chunk = socket.read() as Buffer | null) !== null) chunks.push(chunk);
    const head = Buffer.concat(chunks);
    const compared = Math.min(head.length, H2_PREFACE.length);
    const maybeH2 = head.subarray(0, compared).equals(H2_PREFACE.subarray(0, compared));
    // Wait for more bytes only while they could still be the start of the HTTP/2 preface.
    if (maybeH2 && compared < H2_PREFACE.length) return;
    socket.off("readable", onReadable);
    socket.unshift(head);
    dispatch(maybeH2);
  };
  socket.on("readable", onReadable);
}
