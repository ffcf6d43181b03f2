import { once } from "node:events";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { NodeHandler } from "./node-types.js";

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
// A client that sends nothing this long after connecting is dropped.
const FIRST_BYTES_TIMEOUT_MS = 10_000;

/**
 * Serves HTTP/1.1 and cleartext HTTP/2 on one port. Node's cleartext http2
 * server cannot fall back to HTTP/1.1, so each connection is handed to one of
 * two servers by its first bytes.
 */
export async function listen(handler: NodeHandler, port: number, host: string): Promise<Listener> {
  let closing = false;
  const h1 = http.createServer((req, res) => {
    if (closing) res.setHeader("connection", "close");
    handler(req, res);
  });
  const h2 = http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    if (closing) session.close();
  });
  const sockets = new Set<net.Socket>();

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.setTimeout(FIRST_BYTES_TIMEOUT_MS, () => socket.destroy());
    socket.on("error", () => socket.destroy());
    dispatchByPreface(socket, h1, h2);
  });
  server.listen(port, host);
  await once(server, "listening");

  return {
    port: (server.address() as net.AddressInfo).port,
    async close(graceMs = 10_000) {
      closing = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      h1.closeIdleConnections();
      for (const session of sessions) session.close();
      const deadline = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      await Promise.all([...sockets].map((socket) => once(socket, "close")));
      clearTimeout(deadline);
      await stopped;
    },
  };
}

function dispatchByPreface(socket: net.Socket, h1: http.Server, h2: http2.Http2Server): void {
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
    socket.setTimeout(0);
    socket.unshift(head);
    (maybeH2 ? h2 : h1).emit("connection", socket);
  };
  socket.on("readable", onReadable);
}
