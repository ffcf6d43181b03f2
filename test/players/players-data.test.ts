import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventTimes, queueOf, waitFor } from "../support/events.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * players/data: the profile, then the player's raw events still kept (their device's too), a page a call until
 * next_cursor is empty; nothing of another project's players of the same ids.
 */
let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
/** Every event sent as "ann" or her device, in the order sent. */
const sent: { name: string; timestamp: string; partner_user_id?: string; device_id?: string; event_id?: string }[] = [];

const post = (path: string, body: object, key = project.privateKey) => svc.postOk(path, body, key);

/** Every page of players/data for `who`, followed to the end. */
async function allPages(who: object, key = project.privateKey) {
  const pages = [await post("/v1/players/data", who, key)];
  while (pages.at(-1)!.next_cursor !== "") {
    pages.push(await post("/v1/players/data", { ...who, cursor: pages.at(-1)!.next_cursor }, key));
  }
  return pages;
}

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
  const [earlier, later] = eventTimes(svc, 2);
  await post("/v1/players/update", { players: [{ partner_user_id: "ann", tags: ["vip"], traits: { tier: "gold" } }] });
  const send = async (events: typeof sent) => {
    sent.push(...events);
    await svc.postOk("/v1/events", { events }, project.publicKey);
  };
  await send([{ name: "open", device_id: "ann-phone", timestamp: earlier.timestamp }]);
  await post("/v1/players/update", { players: [{ partner_user_id: "ann", device_id: "ann-phone" }] });
  // More than a page: 1,000 events a page.
  for (let call = 0; call < 2; call++) {
    await send(
      Array.from({ length: 600 }, (_, i) => ({
        name: i % 2 === 0 ? "buy" : "open",
        partner_user_id: "ann",
        timestamp: later.timestamp,
        event_id: `e-${call}-${i}`,
      })),
    );
  }
  await svc.postOk(
    "/v1/events",
    { events: [{ name: "open", partner_user_id: "ben", timestamp: later.timestamp, properties: { amount: 3 } }] },
    project.publicKey,
  );
  await svc.postOk(
    "/v1/events",
    { events: [{ name: "spy", partner_user_id: "ann", timestamp: later.timestamp }] },
    (await svc.createProject("Other Game")).publicKey,
  );
  await waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
  );
}, 120_000);
afterAll(() => svc.stop());

describe("players/data", () => {
  it("answers the profile, then every kept event of the player and their device, in pages", async () => {
    const pages = await allPages({ partner_user_id: "ann" });
    expect(pages.length).toBeGreaterThan(1);
    expect(pages[0]).toMatchObject({ found: true, profile: { identity_key: "u:ann", tags: ["vip"] } });
    for (const page of pages.slice(1)) expect(page.profile).toBeNull();
    const events = pages.flatMap((page) => page.events);
    expect(events).toEqual(
      sent.map((e) => ({
        name: e.name,
        partner_user_id: e.partner_user_id ?? null,
        device_id: e.device_id ?? null,
        timestamp: new Date(e.timestamp).toISOString(),
        properties: null,
        event_id: e.event_id ?? null,
      })),
    );
    // By the device: the same player.
    const byDevice = await allPages({ device_id: "ann-phone" });
    expect(byDevice.flatMap((page) => page.events)).toEqual(events);
  });

  it("answers a player's properties as sent, and nothing of an unknown one", async () => {
    const [ben] = await allPages({ partner_user_id: "ben" });
    expect(ben).toMatchObject({ found: false, profile: null, next_cursor: "" });
    expect(ben.events).toMatchObject([{ name: "open", partner_user_id: "ben", properties: { amount: 3 } }]);
    expect(await post("/v1/players/data", { partner_user_id: "nobody" })).toEqual({
      found: false,
      profile: null,
      events: [],
      next_cursor: "",
    });
  });

  it("shows another project's key nothing of this project's players; a public key is refused (403)", async () => {
    const other = await svc.createProject("Third Game");
    const [page] = await allPages({ partner_user_id: "ann" }, other.privateKey);
    expect(page).toEqual({ found: false, profile: null, events: [], next_cursor: "" });
    const res = await svc.postJson("/v1/players/data", { partner_user_id: "ann" }, project.publicKey);
    expect(res.status).toBe(403);
  });

  it("refuses a cursor it did not answer, naming it", async () => {
    const res = await svc.postJson("/v1/players/data", { partner_user_id: "ann", cursor: "x" }, project.privateKey);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^cursor: /);
  });

  it("answers nothing of an erased player", async () => {
    await post("/v1/players/delete", { partner_user_id: "ann" });
    // The worker deletes the raw events once it applies the erasure's segment (which carries no events to count).
    const pages = await waitFor(
      () => allPages({ partner_user_id: "ann" }),
      (answered) => answered.every((page) => page.events.length === 0),
    );
    expect(pages[0]).toMatchObject({ found: false, profile: null });
    expect((await allPages({ device_id: "ann-phone" })).flatMap((page) => page.events)).toEqual([]);
  });
});
