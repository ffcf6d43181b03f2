import { describe, expect, it } from "vitest";
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
