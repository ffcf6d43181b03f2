import { once } from "node:events";
import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { spawnMain } from "../support/service/main-process.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

// Every HTTP/2 connection opens with the preface and a SETTINGS frame (here empty).
const H2_PREFACE_AND_SETTINGS = Buffer.concat([
  Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"),
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
]);

/** A raw client socket that records what the server sent and when the server closed it. */
interface RawClient {
  socket: net.Socket;
  received: () => string;
  /** Resolves with the milliseconds from `since` to the close; rejects after `withinMs`. */
  closed(since: number, withinMs: number): Promise<number>;
  isClosed: () => boolean;
}

/** `promise`, or a rejection naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function rawClient(port: number, localAddress?: string): Promise<RawClient> {
  const socket = net.connect({ port, host: "127.0.0.1", localAddress });
  const chunks: Buffer[] = [];
  let closedAt: number | undefined;
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.on("error", () => {});
  const close = once(socket, "close").then(() => (closedAt = Date.now()));
  await once(socket, "connect");
  return {
    socket,
    received: () => Buffer.concat(chunks).toString("latin1"),
    isClosed: () => closedAt !== undefined,
    async closed(since, withinMs) {
      return (await within(close, withinMs, "close")) - since;
    },
  };
}

/** An HTTP/2 connection that has sent its preface and that the server has answered (SETTINGS) or refused. */
async function idleH2Connection(port: number): Promise<RawClient> {
  const client = await rawClient(port);
  client.socket.write(H2_PREFACE_AND_SETTINGS);
  await Promise.race([once(client.socket, "data"), once(client.socket, "close")]);
  return client;
}

/** Writes `bytes` one character every `everyMs` until the socket closes. */
function drip(socket: net.Socket, bytes: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= bytes.length) clearInterval(timer);
    else socket.write(bytes[i++]);
  }, everyMs);
  socket.once("close", () => clearInterval(timer));
}

function healthz(port: number): Promise<number> {
  return fetch(`http://127.0.0.1:${port}/healthz`).then((res) => res.status);
}

describe("connection timeouts", () => {
  let test: TestService;
  beforeAll(async () => {
    test = await startTestService({
      SERVER_HEADERS_TIMEOUT_SECONDS: "1",
      SERVER_REQUEST_TIMEOUT_SECONDS: "2",
      SERVER_IDLE_TIMEOUT_SECONDS: "2",
    });
  });
  afterAll(() => test.stop());

  it("closes an HTTP/1.1 connection that drips its header lines, with 408", async () => {
    const client = await rawClient(test.service.port);
    const start = Date.now();
    client.socket.write("POST /v1/admin/entitlements HTTP/1.1\r\nHost: x\r\n");
    drip(client.socket, "X-Drip: " + "a".repeat(200), 100);

    const elapsed = await client.closed(start, 5_000);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("closes an HTTP/1.1 request whose declared body drips, with 408", async () => {
    const client = await rawClient(test.service.port);
    const start = Date.now();
    client.socket.write(
      "POST /v1/admin/entitlements HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `X-Api-Key: ${ADMIN_KEY}\r\nContent-Length: 1000000\r\n\r\n`,
    );
    drip(client.socket, "{".padEnd(1_000, " "), 100);

    const elapsed = await client.closed(start, 6_000);
    expect(elapsed).toBeGreaterThanOrEqual(1_900);
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("closes an HTTP/2 connection that sent only its preface and SETTINGS", async () => {
    const start = Date.now();
    const client = await idleH2Connection(test.service.port);
    const elapsed = await client.closed(start, 5_000);
    expect(elapsed).toBeGreaterThanOrEqual(900);
  });

  it("closes an HTTP/2 session idle between requests, with GOAWAY", async () => {
    const session = http2.connect(`http://127.0.0.1:${test.service.port}`);
    session.on("error", () => {});
    const goaway = once(session, "goaway");
    const stream = session.request({ ":path": "/healthz" });
    const [headers] = (await once(stream, "response")) as [http2.IncomingHttpHeaders];
    expect(headers[":status"]).toBe(200);
    stream.resume();
    await once(stream, "close");
    const idleSince = Date.now();

    await within(goaway, 5_000, "GOAWAY");
    expect(Date.now() - idleSince).toBeGreaterThanOrEqual(1_900);
    if (!session.closed) await once(session, "close");
  });

  it("cuts an HTTP/2 stream whose body drips, and keeps serving the session", async () => {
    const session = http2.connect(`http://127.0.0.1:${test.service.port}`);
    session.on("error", () => {});
    const start = Date.now();
    const slow = session.request({
      ":method": "POST",
      ":path": "/v1/admin/entitlements",
      "content-type": "application/json",
      "x-api-key": ADMIN_KEY,
    });
    slow.on("error", () => {});
    slow.write("{");
    const timer = setInterval(() => slow.write(" "), 100);
    await within(once(slow, "close"), 6_000, "stream reset");
    clearInterval(timer);
    expect(Date.now() - start).toBeGreaterThanOrEqual(1_900);
    expect(slow.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);

    const next = session.request({ ":path": "/healthz" });
    const [headers] = (await once(next, "response")) as [http2.IncomingHttpHeaders];
    expect(headers[":status"]).toBe(200);
    session.destroy();
  });
});

describe("connection cap", () => {
  const MAX = 12;
  let test: TestService;
  beforeAll(async () => {
    test = await startTestService({ SERVER_MAX_CONNECTIONS: String(MAX) });
  });
  afterAll(() => test.stop());

  it("evicts the longest-idle connections, so /healthz answers while idle connections are held", async () => {
    const held: RawClient[] = [];
    for (let i = 0; i < MAX; i++) held.push(await idleH2Connection(test.service.port));

    // One more idle connection than the cap: the first one, idle longest, makes room.
    held.push(await idleH2Connection(test.service.port));
    await held[0].closed(Date.now(), 5_000);
    expect(held.slice(1).filter((c) => c.isClosed())).toEqual([]);

    // Many more: the server keeps at most MAX of them and still answers /healthz on a new connection.
    for (let i = 0; i < 3 * MAX; i++) held.push(await idleH2Connection(test.service.port));
    expect(await healthz(test.service.port)).toBe(200);
    const stillOpen = held.filter((c) => !c.isClosed());
    expect(stillOpen.length).toBeLessThanOrEqual(MAX);
    held.forEach((c) => c.socket.destroy());
  });

  it("never evicts a connection with a request in flight, and refuses a new one when all are busy", async () => {
    const busy: RawClient[] = [];
    for (let i = 0; i < MAX; i++) {
      const client = await rawClient(test.service.port);
      client.socket.write(
        "POST /v1/admin/entitlements HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          `X-Api-Key: ${ADMIN_KEY}\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n{`,
      );
      // The server answers 100 Continue as it hands the request to the handler: from then on it is in flight.
      await expect.poll(() => client.received(), { timeout: 5_000 }).toMatch(/^HTTP\/1\.1 100 /);
      busy.push(client);
    }
    const refused = await rawClient(test.service.port);
    await refused.closed(Date.now(), 5_000);
    expect(refused.received()).toBe("");
    expect(busy.filter((c) => c.isClosed())).toEqual([]);

    // A finished request makes its connection idle, so a newcomer is admitted in its place.
    busy[0].socket.write("}");
    await expect.poll(() => busy[0].received(), { timeout: 5_000 }).toMatch(/HTTP\/1\.1 400 /);
    expect(await healthz(test.service.port)).toBe(200);
    await busy[0].closed(Date.now(), 5_000);
    busy.forEach((c) => c.socket.destroy());
  });
});

describe("idle connections against the open-file limit", () => {
  it("keep /healthz answering when they outnumber the file descriptors the process may open", async () => {
    // The service as its own process, allowed 256 open files, like the attacked instance was allowed 20,000.
    const main = await spawnMain(
      {
        MONGODB_URI: inject("mongodbUri"),
        DB_NAME: `test_fd_${process.pid}`,
        PLATFORM_ADMIN_KEY: ADMIN_KEY,
        SERVER_MAX_CONNECTIONS: "150",
      },
      { openFileLimit: 256 },
    );
    const held: RawClient[] = [];
    try {
      await within(main.serving, 30_000, "service start");
      const port = Number(new URL(main.baseUrl).port);
      for (let i = 0; i < 300; i++) held.push(await idleH2Connection(port));
      expect(await within(healthz(port), 5_000, "/healthz")).toBe(200);
    } finally {
      held.forEach((c) => c.socket.destroy());
      await main.stop();
    }
  });
});
