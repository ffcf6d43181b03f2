import { describe, expect, it } from "vitest";
import type { Clock } from "../../clock.js";
import { ConnectionPool } from "./connection-pool.js";

class FakeConnection {
  closed = false;
  constructor(readonly name: string) {}
  close(): void {
    this.closed = true;
  }
}

function setup(maxConnections = 3) {
  let ms = 1_000_000;
  const clock: Clock = { now: () => new Date(ms) };
  const pool = new ConnectionPool<FakeConnection>({
    maxConnections,
    firstRequestTimeoutMs: 10_000,
    idleTimeoutMs: 60_000,
    clock,
  });
  const admit = (name: string) => {
    const connection = new FakeConnection(name);
    return { connection, admitted: pool.admit(connection) };
  };
  return { pool, admit, advance: (by: number) => (ms += by) };
}

describe("ConnectionPool", () => {
  it("at the cap evicts the connection idle longest, counting from its last request", () => {
    const { pool, admit, advance } = setup(3);
    const a = admit("a").connection;
    advance(1);
    const b = admit("b").connection;
    advance(1);
    const c = admit("c").connection;
    pool.requestStarted(a);
    advance(1);
    pool.requestFinished(a); // a is now the most recently idle

    expect(admit("d").admitted).toBe(true);
    expect([a.closed, b.closed, c.closed]).toEqual([false, true, false]);
    expect(admit("e").admitted).toBe(true);
    expect([a.closed, c.closed]).toEqual([false, true]);
    expect(pool.size).toBe(3);
  });

  it("never evicts a connection with a request in flight, and refuses a newcomer when all are busy", () => {
    const { pool, admit } = setup(2);
    const a = admit("a").connection;
    const b = admit("b").connection;
    pool.requestStarted(a);
    pool.requestFinished(a);
    pool.requestStarted(a); // busy again after having been idle
    pool.requestStarted(b);
    pool.requestStarted(b);
    pool.requestFinished(b); // one of b's two requests is still in flight

    expect(admit("c").admitted).toBe(false);
    expect([a.closed, b.closed]).toEqual([false, false]);

    pool.requestFinished(a);
    expect(admit("c").admitted).toBe(true);
    expect(a.closed).toBe(true);
  });

  it("closes a connection without a first request after the first-request timeout, an idle one after the idle timeout", () => {
    const { pool, admit, advance } = setup(10);
    const fresh = admit("fresh").connection;
    const used = admit("used").connection;
    const busy = admit("busy").connection;
    pool.requestStarted(used);
    pool.requestFinished(used);
    pool.requestStarted(busy);

    advance(9_999);
    pool.sweep();
    expect(fresh.closed).toBe(false);
    advance(1);
    pool.sweep();
    expect(fresh.closed).toBe(true);

    advance(49_999);
    pool.sweep();
    expect(used.closed).toBe(false);
    advance(1);
    pool.sweep();
    expect(used.closed).toBe(true);
    expect(busy.closed).toBe(false);
    expect(pool.size).toBe(1);
  });

  it("while draining, closes each connection as its last request finishes", () => {
    const { pool, admit } = setup(10);
    const a = admit("a").connection;
    pool.requestStarted(a);
    pool.requestStarted(a);
    pool.drain();
    pool.requestFinished(a);
    expect(a.closed).toBe(false);
    pool.requestFinished(a);
    expect(a.closed).toBe(true);
  });
});
