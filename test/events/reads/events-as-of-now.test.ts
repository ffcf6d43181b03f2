import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { byName, queueOf, waitFor } from "../../support/service/events.js";
import { CohortModel, sorted, type ModelFilter } from "../../support/models/cohort-model.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

const TRIALS = 40;
const PLAYERS = 30;
/** 40 trials of five reads each after seeding: half a minute on a loaded machine, so room beyond the default. */
const TRIALS_TIMEOUT_MS = 180_000;

/** A day `daysAgo` before the service's clock, and an instant inside it that lies in the past. */
function pastDay(daysAgo: number) {
  const at = new Date(svc.clock.now().getTime() - daysAgo * 86_400_000 - 60_000);
  return { day: at.toISOString().slice(0, 10), timestamp: at.toISOString() };
}

async function project(keys: { publicKey: string; privateKey: string }) {
  const days = [3, 2, 1, 0].map((ago) => pastDay(ago).day);
  const range = { from: days[0], to: days[3] };
  const post = (path: string, body: object, key = keys.privateKey) => svc.postOk(path, body, key);
  return {
    days,
    post,
    /** Every read of the filter at once: plain trends, the split by tags, names and search. */
    readAll: async (filter: ModelFilter) => {
      const [plain, split, names, search] = await Promise.all([
        post("/v1/events/trends", { ...range, ...filter }),
        post("/v1/events/trends", { ...range, split_by: "tags" }),
        post("/v1/events/names", { ...range, ...filter }),
        post("/v1/players/search", { ...filter, page_size: 100 }),
      ]);
      return {
        plain: sorted(byName(plain)),
        split: sorted(byName(split)),
        names: names.names.map((n: { name: string; events: string | number }) => ({ ...n, events: Number(n.events) })),
        search: search.players.map((p: { identity_key: string }) => p.identity_key),
      };
    },
    expected: (model: CohortModel, filter: ModelFilter) => ({
      plain: sorted(model.trends(filter, days)),
      split: sorted(model.split({}, days)),
      names: model.names(filter, days),
      search: model.search(filter),
    }),
  };
}

/** 30 players with 1-5 events each over the last days, some of them `gold`, all applied. */
async function seeded(p: Awaited<ReturnType<typeof project>>, model: CohortModel, publicKey: string) {
  const events = [];
  for (let i = 0; i < PLAYERS; i++) {
    const partner = `player-${String(i).padStart(2, "0")}`;
    for (let n = 0; n <= i % 5; n++) {
      const { day, timestamp } = pastDay(1 + ((i + n) % 3));
      const name = n % 2 === 0 ? "play" : "buy";
      model.event(name, { partner }, day);
      events.push({ name, partner_user_id: partner, timestamp });
    }
  }
  // A device with a history of its own, folded into a player later.
  for (const daysAgo of [1, 2]) {
    const { day, timestamp } = pastDay(daysAgo);
    model.event("play", { device: "dev-x" }, day);
    events.push({ name: "play", device_id: "dev-x", timestamp });
  }
  await p.post("/v1/events", { events }, publicKey);
  const gold = Array.from({ length: PLAYERS }, (_, i) => i)
    .filter((i) => i % 3 === 0)
    .map((i) => `player-${String(i).padStart(2, "0")}`);
  await p.post(
    "/v1/players/update",
    { players: gold.map((partner) => ({ partner_user_id: partner, tags_add: ["gold"] })) },
    publicKey,
  );
  for (const partner of gold) model.tag(partner, "gold", true);
  // Make `tier` a materialised trait key, and wait until filters on it read its cohorts.
  await p.post(
    "/v1/players/update",
    { players: [{ partner_user_id: "player-00", traits: { tier: "base" } }] },
    publicKey,
  );
  model.trait("player-00", "tier", "base");
  await waitFor(
    () => p.post("/v1/players/traits/update", { key: "tier", materialise: true }),
    (answer) => answer.ready === true,
  );
  await waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
  );
}

/** One player at a time gains or loses `vip` (a tag, then the trait tier=vip); every read at once equals brute force. */
async function interleave(p: Awaited<ReturnType<typeof project>>, model: CohortModel, publicKey: string) {
  const wrong: string[] = [];
  for (let trial = 0; trial < TRIALS; trial++) {
    const partner = `player-${String((trial * 7) % PLAYERS).padStart(2, "0")}`;
    const asTag = trial % 2 === 0;
    const on = trial % 4 < 2;
    const entry = asTag
      ? { partner_user_id: partner, [on ? "tags_add" : "tags_remove"]: ["VIP"] }
      : on
        ? { partner_user_id: partner, traits: { tier: "vip" } }
        : { partner_user_id: partner, traits_unset: ["tier"] };
    await p.post("/v1/players/update", { players: [entry] }, publicKey);
    if (asTag) model.tag(partner, "vip", on);
    else model.trait(partner, "tier", on ? "vip" : null);
    const filter: ModelFilter = asTag ? { tags: ["vip"] } : { traits: { tier: "vip" } };
    const got = await p.readAll(filter);
    const want = p.expected(model, filter);
    if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`trial ${trial}: ${JSON.stringify({ got, want })}`);
  }
  expect(wrong).toEqual([]);
}

describe("read your writes: charts count every acknowledged player change", () => {
  it(
    `${TRIALS} tag and trait changes, each read at once (filtered, split, names, search), equal brute force`,
    async () => {
      const keys = await svc.createProject();
      const p = await project(keys);
      const model = new CohortModel();
      await seeded(p, model, keys.publicKey);
      // Nothing waits: every event received before the read began is counted.
      const range = { from: p.days[0], to: p.days[3] };
      const idle = await waitFor(
        async () => ({ before: svc.clock.now(), answer: await p.post("/v1/events/trends", range) }),
        ({ answer }) => answer.lag_seconds === 0,
      );
      expect(Date.parse(idle.answer.complete_through)).toBeGreaterThanOrEqual(idle.before.getTime());
      await interleave(p, model, keys.publicKey);
    },
    TRIALS_TIMEOUT_MS,
  );

  it(
    "the same with the apply worker stopped: nothing the worker would move is needed for the answers",
    async () => {
      const keys = await svc.createProject();
      const p = await project(keys);
      const model = new CohortModel();
      await seeded(p, model, keys.publicKey);
      // A second start on the same database with its worker off (EVENT_WORKER), in place of this one.
      const first = svc;
      await first.service.close(1_000);
      await first.database.close();
      svc = await startTestService({ EVENT_WORKER: "off", DB_NAME: first.config.dbName });
      await interleave(p, model, keys.publicKey);

      // A fold the worker has not moved either: the device's history counts for its player (gold) at once.
      await p.post(
        "/v1/players/update",
        { players: [{ partner_user_id: "player-03", device_id: "dev-x" }] },
        keys.publicKey,
      );
      model.link("dev-x", "player-03");
      for (const filter of [{}, { tags: ["gold"] }]) {
        expect(await p.readAll(filter), JSON.stringify(filter)).toEqual(p.expected(model, filter));
      }

      // An event waits in the queue: the answers say so, and put the limit of what they count before its receipt.
      const range = { from: p.days[0], to: p.days[3] };
      const ingested = await p.post(
        "/v1/events",
        { events: [{ name: "late", partner_user_id: "player-01" }] },
        keys.publicKey,
      );
      for (const path of ["/v1/events/trends", "/v1/events/names"]) {
        const answer = await p.post(path, range);
        expect(answer.lag_seconds, path).toBeGreaterThan(0);
        expect(answer.complete_through, path).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
        expect(Date.parse(answer.complete_through), path).toBeLessThanOrEqual(Date.parse(ingested.server_time));
        expect(JSON.stringify(answer), path).not.toContain("late");
      }
    },
    TRIALS_TIMEOUT_MS,
  );
});
