import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { breakProject, queueOf, waitFor } from "../../support/service/events.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ EVENT_NAME_LIMIT: "5" });
});
afterAll(() => svc.stop());

/** An event time a few minutes before the service's now, and its day. */
function recent(): { timestamp: string; day: string } {
  const timestamp = new Date(svc.clock.now().getTime() - 5 * 60_000).toISOString();
  return { timestamp, day: timestamp.slice(0, 10) };
}

describe("what one project can cost", () => {
  it("rejects an event with a new name past EVENT_NAME_LIMIT with name_limit; known names still go in", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const other = await svc.createProject();
    const { timestamp, day } = recent();
    const event = (name: string) => ({ name, partner_user_id: "ann", timestamp });
    const first = await svc.postJson("/v1/events", { events: ["a", "b", "c", "a"].map(event) }, publicKey);
    expect(first.body).toMatchObject({ accepted: 4, rejected: [] });
    // Two more names fit, of the four new ones in this call: the first two, in order.
    const second = await svc.postJson(
      "/v1/events",
      { events: ["d", "x:bad name", "e", "f", "g", "a"].map(event) },
      publicKey,
    );
    expect(second.status).toBe(200);
    expect(second.body.accepted).toBe(3);
    expect(second.body.rejected.map((r: { index: number; code: string }) => [r.index, r.code])).toEqual([
      [1, "bad_name"],
      [3, "name_limit"],
      [4, "name_limit"],
    ]);
    expect(second.body.rejected[1].message).toMatch(/^name: /);
    const third = await svc.postJson("/v1/events", { events: ["h", "e"].map(event) }, publicKey);
    expect(third.body).toMatchObject({ accepted: 1, rejected: [{ index: 0, code: "name_limit" }] });
    // Another project has a limit of its own.
    const elsewhere = await svc.postJson("/v1/events", { events: ["f", "g"].map(event) }, other.publicKey);
    expect(elsewhere.body).toMatchObject({ accepted: 2, rejected: [] });

    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
    );
    const names = await svc.postJson("/v1/events/names", { from: day, to: day }, privateKey);
    expect(names.body.names.map((n: { name: string }) => n.name).sort()).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("refuses more than 50 names in trends, naming the field", async () => {
    const { privateKey } = await svc.createProject();
    const { day } = recent();
    const names = Array.from({ length: 51 }, (_, i) => `n${i}`);
    const over = await svc.postJson("/v1/events/trends", { from: day, to: day, names }, privateKey);
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ code: "invalid_argument", message: expect.stringMatching(/^names: /) });
    const fifty = await svc.postJson(
      "/v1/events/trends",
      { from: day, to: day, names: names.slice(0, 50) },
      privateKey,
    );
    expect(fifty.status).toBe(200);
  });

  it("applies another project's events while one project's apply keeps failing, and the failing one once it heals", async () => {
    const failing = await svc.createProject();
    const healthy = await svc.createProject();
    const { timestamp, day } = recent();
    const repair = await breakProject(svc, failing.projectId);
    const send = (key: string, player: string) =>
      svc.postJson("/v1/events", { events: [{ name: "play", partner_user_id: player, timestamp }] }, key);
    expect((await send(failing.publicKey, "ann")).body.accepted).toBe(1);
    expect((await send(failing.publicKey, "bob")).body.accepted).toBe(1);
    for (const player of ["cat", "dan", "eve"]) expect((await send(healthy.publicKey, player)).body.accepted).toBe(1);
    const names = (key: string) => svc.postJson("/v1/events/names", { from: day, to: day }, key);
    await waitFor(
      async () => (await names(healthy.privateKey)).body.names,
      (got) => JSON.stringify(got) === JSON.stringify([{ name: "play", events: "3" }]),
    );
    // The failing project's events wait, the later one of another player too (a project's order holds).
    expect((await names(failing.privateKey)).body.names).toEqual([]);
    // Only they wait: the healthy project's queue, its own, is applied.
    expect((await queueOf(svc)).queue_depth).toBe(2);
    await repair();
    await waitFor(
      async () => (await names(failing.privateKey)).body.names,
      (got) => JSON.stringify(got) === JSON.stringify([{ name: "play", events: "2" }]),
    );
    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
    );
    expect((await names(healthy.privateKey)).body.names).toEqual([{ name: "play", events: "3" }]);
  });
});
