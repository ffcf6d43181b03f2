import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { byName, queueOf, waitFor } from "../../support/service/events.js";
import { CohortModel, sorted, type ModelFilter } from "../../support/models/cohort-model.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

const PLAYERS = ["ann", "ben", "cat", "dan"];
const DEVICES = ["dev-1", "dev-2"];
const TAGS = ["red", "blue", "green"];
/** `lvl` has materialised cohorts; `mood` does not (its filters take the exact path). */
const LEVELS = ["1", "2"];

type Op =
  | { kind: "tag"; player: string; tag: string; on: boolean }
  | { kind: "trait"; player: string; key: "lvl" | "mood"; value: string | null }
  | { kind: "link"; device: string; player: string }
  | { kind: "events"; batch: { who: { partner?: string; device?: string }; name: string; daysAgo: number }[] };

const player = fc.constantFrom(...PLAYERS);
const filter: fc.Arbitrary<ModelFilter | "split"> = fc.oneof(
  fc.constant("split" as const),
  fc.constant({}),
  fc.constantFrom(...TAGS).map((tag) => ({ tags: [tag] })),
  fc
    .tuple(fc.subarray(TAGS, { minLength: 2, maxLength: 2 }), fc.constantFrom("any" as const, "all" as const))
    .map(([tags, match]) => ({ tags, tags_match: match })),
  fc.constantFrom(...LEVELS).map((lvl) => ({ traits: { lvl } })),
  fc.constantFrom("happy", "sad").map((mood) => ({ traits: { mood } })),
  fc
    .tuple(fc.constantFrom(...TAGS), fc.constantFrom(...LEVELS))
    .map(([tag, lvl]) => ({ tags: [tag], traits: { lvl } })),
  fc.subarray(TAGS, { minLength: 2, maxLength: 2 }).map(([tag, none]) => ({ tags: [tag], tags_none: [none] })),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("tag" as const), player, tag: fc.constantFrom(...TAGS), on: fc.boolean() }),
  fc.record({
    kind: fc.constant("trait" as const),
    player,
    key: fc.constant("lvl" as const),
    value: fc.constantFrom(...LEVELS, null),
  }),
  fc.record({
    kind: fc.constant("trait" as const),
    player,
    key: fc.constant("mood" as const),
    value: fc.constantFrom("happy", "sad", null),
  }),
  fc.record({ kind: fc.constant("link" as const), device: fc.constantFrom(...DEVICES), player }),
  fc.record({
    kind: fc.constant("events" as const),
    batch: fc.array(
      fc.record({
        who: fc.oneof(
          player.map((partner) => ({ partner })),
          fc.constantFrom(...DEVICES).map((device) => ({ device })),
        ),
        name: fc.constantFrom("play", "buy"),
        daysAgo: fc.integer({ min: 1, max: 3 }),
      }),
      { minLength: 1, maxLength: 6 },
    ),
  }),
);
/** Each step is an operation, then at once a read of a random filter (a split by tags, or no read). */
const step = fc.record({ op, read: fc.option(filter, { nil: undefined }) });

/** An instant `daysAgo` days before the service's clock (always in the past) and its day. */
function past(daysAgo: number) {
  const at = new Date(svc.clock.now().getTime() - daysAgo * 86_400_000 - 60_000);
  return { day: at.toISOString().slice(0, 10), timestamp: at.toISOString() };
}

async function run(steps: readonly { op: Op; read: ModelFilter | "split" | undefined }[]): Promise<void> {
  const { privateKey, publicKey } = await svc.createProject();
  const days = [3, 2, 1, 0].map((ago) => past(ago).day);
  const range = { from: days[0], to: days[3] };
  const post = (path: string, body: object, key = privateKey) => svc.postOk(path, body, key);
  const model = new CohortModel();
  await post("/v1/players/update", { players: [{ partner_user_id: "ann", traits: { lvl: "1" } }] }, publicKey);
  model.trait("ann", "lvl", "1");
  await waitFor(
    () => post("/v1/players/traits/update", { key: "lvl", materialise: true }),
    (answer) => answer.ready === true,
  );
  const linked = new Set<string>();
  for (const [step, { op: one, read }] of steps.entries()) {
    if (one.kind === "tag") {
      await post("/v1/players/update", {
        players: [{ partner_user_id: one.player, [one.on ? "tags_add" : "tags_remove"]: [one.tag] }],
      });
      model.tag(one.player, one.tag, one.on);
    } else if (one.kind === "trait") {
      const entry = one.value === null ? { traits_unset: [one.key] } : { traits: { [one.key]: one.value } };
      await post("/v1/players/update", { players: [{ partner_user_id: one.player, ...entry }] });
      model.trait(one.player, one.key, one.value);
    } else if (one.kind === "link") {
      // A device is linked once: it belongs to its first player from then on.
      if (!linked.has(one.device)) {
        linked.add(one.device);
        await post("/v1/players/update", { players: [{ partner_user_id: one.player, device_id: one.device }] });
        model.link(one.device, one.player);
      }
    } else if (one.kind === "events") {
      const events = one.batch.map(({ who, name, daysAgo }) => {
        const { day, timestamp } = past(daysAgo);
        model.event(name, who, day);
        return { name, timestamp, ...(who.partner ? { partner_user_id: who.partner } : { device_id: who.device }) };
      });
      await post("/v1/events", { events }, publicKey);
      // Events are queued: a read counts them once applied (complete_through says so); changes need no wait.
      await waitFor(
        () => queueOf(svc),
        (queue) => queue.queue_depth === 0,
      );
    }
    if (read === "split") {
      const got = sorted(byName(await post("/v1/events/trends", { ...range, split_by: "tags" })));
      expect(got, `step ${step}: split`).toEqual(sorted(model.split({}, days)));
    } else if (read !== undefined) {
      const got = sorted(byName(await post("/v1/events/trends", { ...range, ...read })));
      expect(got, `step ${step}: ${JSON.stringify(read)}`).toEqual(sorted(model.trends(read, days)));
    }
  }
}

describe("read your writes, as a property", () => {
  it("random tag and trait changes, links and event batches, read at random points, always equal brute force", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 14 }), (steps) => run(steps)),
      { numRuns: 30, endOnFailure: true },
    );
    // 30 sequences of up to 14 steps, each a project of its own: a minute or two on mongo-java-server.
  }, 300_000);
});
