import { expect, it } from "vitest";
import { Gate } from "./gate.js";

it("runs at most `limit` tasks at once, the rest in arrival order, and passes on results and errors", async () => {
  const gate = new Gate(2);
  let running = 0;
  let most = 0;
  const started: number[] = [];
  const releases: (() => void)[] = [];
  const task = (i: number) => () => {
    started.push(i);
    most = Math.max(most, ++running);
    return new Promise<number>((resolve) => releases.push(() => (running--, resolve(i))));
  };
  const results = [0, 1, 2, 3, 4].map((i) => gate.run(task(i)));
  const failed = expect(gate.run(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
  for (let done = 0; done < 5; done++) {
    await until(() => releases.length > done);
    releases[done]();
  }
  expect(await Promise.all(results)).toEqual([0, 1, 2, 3, 4]);
  await failed;
  expect(most).toBe(2);
  expect(started).toEqual([0, 1, 2, 3, 4]);
  // A failed task gave its slot back.
  expect(await gate.run(async () => "after")).toBe("after");
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(condition()).toBe(true);
}
