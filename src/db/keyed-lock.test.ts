import { describe, expect, it } from "vitest";
import { UnavailableError } from "../errors.js";
import { KeyedLock } from "./keyed-lock.js";

describe("KeyedLock", () => {
  it("runs holders of one key one at a time, in arrival order, and different keys in parallel", async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = lock.run(["k"], async () => {
      log.push("first start");
      await gate;
      log.push("first end");
    });
    const second = lock.run(["k"], async () => void log.push("second"));
    await lock.run(["other"], async () => void log.push("other"));
    expect(log).toEqual(["first start", "other"]);
    release();
    await Promise.all([first, second]);
    expect(log).toEqual(["first start", "other", "first end", "second"]);
  });

  it("releases the key when the holder throws", async () => {
    const lock = new KeyedLock();
    await expect(lock.run(["k"], async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await expect(lock.run(["k", "j"], async () => "ok")).resolves.toBe("ok");
  });
});

describe("KeyedLock with a wait limit", () => {
  it("throws UnavailableError without running fn when the key is not free in time, and keeps the order", async () => {
    const lock = new KeyedLock();
    let release!: () => void;
    const held = lock.run(["k"], () => new Promise<void>((resolve) => (release = resolve)));
    let ran = false;
    const waiting = lock.run(["j", "k"], async () => void (ran = true), { waitLimitMs: 20 });
    await expect(waiting).rejects.toBeInstanceOf(UnavailableError);
    expect(ran).toBe(false);
    // The key taken before giving up ("j") was let go; "k" is still held, and a later caller still waits for it.
    await expect(lock.run(["j"], async () => "free", { waitLimitMs: 20 })).resolves.toBe("free");
    const order: string[] = [];
    const after = lock.run(["k"], async () => void order.push("after"));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual([]);
    release();
    await held;
    await after;
    expect(order).toEqual(["after"]);
  });

  it("runs fn when the key comes free within the limit", async () => {
    const lock = new KeyedLock();
    let release!: () => void;
    const held = lock.run(["k"], () => new Promise<void>((resolve) => (release = resolve)));
    const waiting = lock.run(["k"], async () => "ran", { waitLimitMs: 5_000 });
    while (release === undefined) await new Promise((resolve) => setImmediate(resolve));
    release();
    await held;
    await expect(waiting).resolves.toBe("ran");
  });
});

describe("KeyedLock shedding its waiters", () => {
  it("fails the callers waiting when a holder fails as `shed` says, and runs those that come after", async () => {
    const shedError = new UnavailableError("database unavailable");
    const lock = new KeyedLock((error) => (error instanceof Error && error.message === "down" ? shedError : undefined));
    let fail!: (error: Error) => void;
    const holder = lock.run(["k"], () => new Promise<void>((_, reject) => (fail = reject)));
    const ran: string[] = [];
    const waiters = [
      lock.run(["k"], async () => void ran.push("a")),
      lock.run(["j", "k"], async () => void ran.push("b")),
    ];
    while (fail === undefined) await new Promise((resolve) => setImmediate(resolve));
    fail(new Error("down"));
    await expect(holder).rejects.toThrow("down");
    for (const waiter of waiters) await expect(waiter).rejects.toBe(shedError);
    expect(ran).toEqual([]);
    await expect(lock.run(["k", "j"], async () => "after")).resolves.toBe("after");
  });

  it("lets waiters run when a holder fails otherwise", async () => {
    const lock = new KeyedLock(() => undefined);
    const holder = lock.run(["k"], async () => Promise.reject(new Error("invalid")));
    const waiter = lock.run(["k"], async () => "ran");
    await expect(holder).rejects.toThrow("invalid");
    await expect(waiter).resolves.toBe("ran");
  });
});
