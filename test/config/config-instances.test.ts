import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, TestClock, type TestService } from "../support/service/service.js";

// Two instances on one database (an engine that isolates updates, as MongoDB: see vitest.config.ts). A change made
// on one is in the other's answers once its clock has moved a second past its last look at the project's version;
// changes of one key from both at once each make a version of their own.

let a: TestService;
let b: TestService;
/** B's time moves only when the test moves it. */
const clockOfB = new TestClock();
beforeAll(async () => {
  a = await startTestService();
  clockOfB.freeze();
  b = await startTestService({ DB_NAME: a.config.dbName }, { clock: clockOfB });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
});

const evaluate = (svc: TestService, key: string) =>
  svc.postOk("/v1/config/evaluate", { partner_user_id: "p1", keys: ["flag"] }, key);

describe("two instances", () => {
  it("answer a change made on the other within a second", async () => {
    const { privateKey } = await a.createProject();
    expect((await evaluate(b, privateKey)).config).toEqual({});
    await a.postOk("/v1/config/update", { key: "flag", default_value: "on" }, privateKey);
    expect((await evaluate(a, privateKey)).config).toEqual({ flag: "on" });

    // B compiled the project a moment ago by its clock: it keeps that compile for up to a second.
    expect((await evaluate(b, privateKey)).config).toEqual({});
    clockOfB.advance(999);
    expect((await evaluate(b, privateKey)).config).toEqual({});
    clockOfB.advance(1);
    const after = await evaluate(b, privateKey);
    expect(after.config).toEqual({ flag: "on" });
    expect(after.version).toBe((await evaluate(a, privateKey)).version);

    // An experiment started on A runs on B within the second too.
    const variants = [
      { name: "a", weight: 1 },
      { name: "b", weight: 1 },
    ];
    await a.postOk("/v1/experiments/update", { name: "exp", variants, state: "running" }, privateKey);
    expect(Object.keys((await evaluate(b, privateKey)).experiments)).toEqual([]);
    clockOfB.advance(1_000);
    expect(Object.keys((await evaluate(b, privateKey)).experiments)).toEqual(["exp"]);
  });

  it("make a version of their own for each of their concurrent changes of one key", async () => {
    const { privateKey } = await a.createProject();
    const changes = Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0 ? a : b).postOk("/v1/config/update", { key: "raced", default_value: i }, privateKey),
    );
    const versions = (await Promise.all(changes)).map((answer) => answer.entry.version);
    expect([...versions].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const history = await a.postOk("/v1/config/history", { key: "raced", page_size: 100 }, privateKey);
    expect(history.versions.map((v: { version: number }) => v.version)).toEqual(
      Array.from({ length: 20 }, (_, i) => 20 - i),
    );
    const [last] = history.versions;
    const listed = await b.postOk("/v1/config/list", {}, privateKey);
    expect(listed.entries).toEqual([last.entry]);
  });
});
