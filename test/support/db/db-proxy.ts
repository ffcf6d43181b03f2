import { once } from "node:events";
import net from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import type { CommandStartedEvent, MongoClient } from "mongodb";
import { afterAll, beforeAll, inject } from "vitest";
import { waitFor } from "../service/main-process.js";
import { startTestService, type TestService } from "../service/service.js";

/**
 * A TCP proxy in front of the database server: a test points the service at
 * it and cuts it to make the database fail at an exact step, a real network
 * fault rather than a mock of the driver. `cut` is synchronous, so it can run
 * inside a driver event, before the driver hands the command's reply back.
 */
export class DbProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private droppingReplies = false;
  /** The bytes whose first sending turns dropping replies on (dropRepliesFrom). */
  private dropFrom: Buffer | undefined;
  /** The bytes whose every sending drops its connection (failCommandsHolding). */
  private failing: Buffer | undefined;
  /** The commands held back before they are passed on (slowCommands), and how many were. */
  private slow: { matches: (command: Buffer) => boolean; ms: number; seen: number } | undefined;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {}

  static async start(targetUri: string): Promise<DbProxy> {
    const url = new URL(targetUri);
    const probe = net.createServer().listen(0, "127.0.0.1");
    await once(probe, "listening");
    const { port } = probe.address() as net.AddressInfo;
    probe.close();
    await once(probe, "close");
    const proxy = new DbProxy({ host: url.hostname, port: Number(url.port || 27017) }, port);
    await proxy.restore();
    return proxy;
  }

  /** A URI for the proxy; `directConnection` keeps the driver from finding the server behind it. */
  get uri(): string {
    return `mongodb://127.0.0.1:${this.port}/?directConnection=true`;
  }

  /** Passes commands on but drops the database's replies until `restore`, as a connection lost mid-reply does. */
  dropReplies(): void {
    this.droppingReplies = true;
  }

  /** As dropReplies, from the first command whose bytes hold `text` (a collection's name) on. */
  dropRepliesFrom(text: string): void {
    this.dropFrom = Buffer.from(text);
  }

  /**
   * Drops the connection of every command whose bytes hold `text` (a collection's name), so that command fails, until
   * `restore`; the others (a ping) pass.
   */
  failCommandsHolding(text: string): void {
    this.failing = Buffer.from(text);
  }

  /**
   * Holds every command whose bytes `matches` answers true of for `ms` before passing it on (a step made slow, not
   * failed: the driver's socket timeout must be longer); answers how many were held so far.
   */
  slowCommands(matches: (command: Buffer) => boolean, ms: number): { readonly seen: number } {
    this.slow = { matches, ms, seen: 0 };
    return this.slow;
  }

  /** Drops every connection and refuses new ones until `restore`. */
  cut(): void {
    this.server?.close();
    this.server = undefined;
    this.dropConnections();
  }

  /** Drops every open connection but takes new ones: a fault the driver reconnects from at once. */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  async restore(): Promise<void> {
    this.failing = undefined;
    if (this.droppingReplies) {
      this.droppingReplies = false;
      // A driver connection that missed a reply would read the next one out of step.
      this.cut();
    }
    if (this.server) return;
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("error", () => socket.destroy());
        socket.on("close", () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      // Once a command of this connection was held back, what follows it waits its turn.
      let held: Promise<unknown> | undefined;
      client.on("data", (command: Buffer) => {
        if (this.dropFrom && command.includes(this.dropFrom)) [this.droppingReplies, this.dropFrom] = [true, undefined];
        if (this.failing && command.includes(this.failing)) return client.destroy();
        const slow = this.slow;
        if (slow?.matches(command)) {
          slow.seen++;
          held = (held ?? Promise.resolve()).then(() => delay(slow.ms));
        }
        if (held) held = held.then(() => upstream.write(command));
        else upstream.write(command);
      });
      upstream.on("data", (reply: Buffer) => {
        if (!this.droppingReplies) client.write(reply);
      });
    });
    server.listen(this.port, "127.0.0.1");
    await once(server, "listening");
    this.server = server;
  }

  /** Cuts as the first command of `client` matching `matches` starts (that command fails); resolves once it has. */
  cutAt(client: MongoClient, matches: (event: CommandStartedEvent) => boolean): Promise<void> {
    return new Promise((resolve) => {
      const onStarted = (event: CommandStartedEvent) => {
        if (!matches(event)) return;
        client.off("commandStarted", onStarted);
        this.cut();
        resolve();
      };
      client.on("commandStarted", onStarted);
    });
  }

  /** Cuts as soon as the first command of `client` matching `matches` has succeeded, before `client` sees its reply. */
  cutAfter(client: MongoClient, matches: (event: CommandStartedEvent) => boolean): void {
    let requestId: number | undefined;
    const onStarted = (event: CommandStartedEvent) => {
      if (requestId === undefined && matches(event)) requestId = event.requestId;
    };
    const onSucceeded = (event: { requestId: number }) => {
      if (event.requestId !== requestId) return;
      this.cut();
      client.off("commandStarted", onStarted);
      client.off("commandSucceeded", onSucceeded);
    };
    client.on("commandStarted", onStarted);
    client.on("commandSucceeded", onSucceeded);
  }

  /** Restores the proxy and waits until the service at `baseUrl` reaches its database again. */
  async restoreFor(baseUrl: string): Promise<void> {
    await this.restore();
    await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, 20_000, "the database again");
  }
}

/** Matches a driver command of `name` on `collection` (to cut the proxy at it). */
export const commandOn = (name: string, collection: string) => (event: CommandStartedEvent) =>
  event.commandName === name && event.command[name] === collection;

/** A test service reaching the run's database through a proxy the test cuts; `stop` restores, stops and cuts. */
export async function serviceBehindProxy(env: Record<string, string> = {}) {
  const proxy = await DbProxy.start(inject("mongodbUri"));
  const svc = await startTestService(env, { mongodbUri: proxy.uri });
  const stop = async () => {
    await proxy.restore();
    await svc.stop();
    proxy.cut();
  };
  return { proxy, svc, stop };
}

/**
 * serviceBehindProxy for a whole suite: started before its tests, stopped after them; `svc` and `proxy` are there
 * once the tests run.
 */
export function suiteBehindProxy(env: Record<string, string> = {}): {
  readonly svc: TestService;
  readonly proxy: DbProxy;
} {
  let running: Awaited<ReturnType<typeof serviceBehindProxy>> | undefined;
  beforeAll(async () => {
    running = await serviceBehindProxy(env);
  });
  afterAll(() => running?.stop());
  return {
    get svc() {
      return running!.svc;
    },
    get proxy() {
      return running!.proxy;
    },
  };
}
