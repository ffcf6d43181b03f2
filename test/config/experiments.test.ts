import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectIdRange } from "../../src/db/ids.js";
import { modelEligible, modelVariant, type ModelExperiment } from "../support/models/config-model.js";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

// Experiments: their checks, assignment by bucket against a brute force, assignments kept once exposed, one
// exposure per player whatever the concurrency, and nothing recorded by a reader key or for a stopped experiment.

let svc: TestService;
let launch: LaunchFixture;
let reader: string;
beforeAll(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: "0" });
  launch = await createLaunchFixture(svc);
  reader = (await svc.createKey("reader", launch.projectId)).key;
});
afterAll(() => svc.stop());

const update = (body: object, key = launch.privateKey) => svc.postJson("/v1/experiments/update", body, key);
const updateOk = (body: object) => svc.postOk("/v1/experiments/update", body, launch.privateKey);
const evaluate = (partner: string, key: string) =>
  svc.postOk("/v1/config/evaluate", { partner_user_id: partner }, key) as Promise<{
    experiments: Record<string, string>;
  }>;
const two = [
  { name: "a", weight: 1 },
  { name: "b", weight: 1 },
];

/** The exposures recorded in the project, as `<experiment>/<identity key>` → variant. */
async function exposures(): Promise<Map<string, { variant: string; exposed_at: Date }>> {
  const docs = await svc.database.db
    .collection<{ _id: string; variant: string; exposed_at: Date }>("experiment_exposures")
    .find({ _id: projectIdRange(launch.projectId) })
    .toArray();
  return new Map(
    docs.map(({ _id, variant, exposed_at }) => [_id.slice(_id.indexOf("/") + 1), { variant, exposed_at }]),
  );
}

describe("experiments/update", () => {
  it.each([
    ["one variant", { name: "x", variants: [{ name: "a", weight: 1 }], state: "draft" }, /^variants: /],
    [
      "ten variants",
      { name: "x", variants: Array.from({ length: 10 }, (_, i) => ({ name: `v${i}`, weight: 1 })), state: "draft" },
      /^variants: /,
    ],
    [
      "a weight of 0",
      { name: "x", variants: [...two, { name: "c", weight: 0 }], state: "draft" },
      /^variants\[2\]\.weight: /,
    ],
    [
      "a negative weight",
      { name: "x", variants: [{ name: "a", weight: -1 }, two[1]], state: "draft" },
      /^variants\[0\]\.weight: /,
    ],
    [
      "a weight that is no number",
      { name: "x", variants: [{ name: "a", weight: "heavy" }, two[1]], state: "draft" },
      /^variants\[0\]\.weight: /,
    ],
    [
      "a variant named twice",
      { name: "x", variants: [...two, { name: "a", weight: 2 }], state: "draft" },
      /^variants\[2\]\.name: .*twice/,
    ],
    [
      "a variant name outside the rules",
      { name: "x", variants: [{ name: "a b", weight: 1 }, two[1]], state: "draft" },
      /^variants\[0\]\.name: /,
    ],
    ["a control that is no variant", { name: "x", variants: two, control: "c", state: "draft" }, /^control: /],
    ["a name outside the rules", { name: "x/y", variants: two, state: "draft" }, /^name: /],
    ["an unknown state", { name: "x", variants: two, state: "paused" }, /^state: /],
    ["no state", { name: "x", variants: two }, /^state: /],
    ["a malformed filter", { name: "x", variants: two, tags: ["_hidden"], state: "draft" }, /^tags: /],
    ["an unknown experiment (a change of state alone)", { name: "unknown", state: "stopped" }, /^name: no experiment/],
  ])("refuses %s with a 400 naming the field", async (_case, body, message) => {
    const res = await update(body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_argument");
    expect(res.body.message).toMatch(message);
  });

  it("answers the experiment; control defaults to the first variant; a state alone changes the state", async () => {
    const created = await updateOk({
      name: "colours",
      variants: two,
      tags: ["VIP"],
      traits: { tier: "gold" },
      state: "draft",
    });
    expect(created.experiment).toEqual({
      name: "colours",
      variants: two,
      control: "a",
      tags: ["vip"],
      tags_match: "any",
      tags_none: [],
      traits: { tier: "gold" },
      state: "draft",
      updated_at: expect.any(String),
    });
    const running = await updateOk({ name: "colours", state: "running" });
    expect(running.experiment).toMatchObject({ variants: two, tags: ["vip"], state: "running" });
    // Once it has run, its variants keep their names and it never goes back to draft.
    const renamed = await update({ name: "colours", variants: [two[0], { name: "c", weight: 1 }], state: "running" });
    expect(renamed.status).toBe(400);
    expect(renamed.body.message).toMatch(/^variants: /);
    expect((await update({ name: "colours", state: "draft" })).body.message).toMatch(/^state: /);
    const reweighed = await updateOk({
      name: "colours",
      variants: [{ name: "b", weight: 3 }, two[0]],
      control: "a",
      state: "stopped",
    });
    expect(reweighed.experiment).toMatchObject({
      variants: [{ name: "b", weight: 3 }, two[0]],
      control: "a",
      state: "stopped",
    });
  });

  it("runs at most 20 experiments a project", async () => {
    const { privateKey } = await svc.createProject("Many Experiments");
    for (let i = 0; i < 20; i++) {
      await svc.postOk("/v1/experiments/update", { name: `e${i}`, variants: two, state: "running" }, privateKey);
    }
    const over = await svc.postJson(
      "/v1/experiments/update",
      { name: "e20", variants: two, state: "running" },
      privateKey,
    );
    expect(over.status).toBe(400);
    expect(over.body.message).toMatch(/^state: .*20/);
    // As a draft it is kept; it runs once another stops.
    await svc.postOk("/v1/experiments/update", { name: "e20", variants: two, state: "draft" }, privateKey);
    await svc.postOk("/v1/experiments/update", { name: "e0", state: "stopped" }, privateKey);
    await svc.postOk("/v1/experiments/update", { name: "e20", state: "running" }, privateKey);
    const list = await svc.postOk("/v1/experiments/list", { page_size: 100 }, privateKey);
    expect(list.experiments_info.total).toBe(21);
    expect(list.experiments.filter((e: { state: string }) => e.state === "running")).toHaveLength(20);
  });

  it("lists by name a page at a time to a reader key, never to the public key or another project", async () => {
    const page = await svc.postOk("/v1/experiments/list", { page_size: 1 }, reader);
    expect(page.experiments.map((e: { name: string }) => e.name)).toEqual(["colours"]);
    expect(page.experiments_info.page).toBe(1);
    expect((await svc.postJson("/v1/experiments/list", {}, launch.publicKey)).status).toBe(403);
    expect((await update({ name: "y", variants: two, state: "draft" }, reader)).status).toBe(403);
    const other = await svc.createProject("Other");
    expect((await svc.postOk("/v1/experiments/list", {}, other.privateKey)).experiments).toEqual([]);
  });
});

describe("assignment and exposures", () => {
  const weighted: ModelExperiment = {
    name: "shop.layout",
    variants: [
      { name: "control", weight: 1 },
      { name: "grid", weight: 2 },
      { name: "list", weight: 3.5 },
    ],
    tags: ["eligible"],
  };
  const players = Array.from({ length: 300 }, (_, i) => `player-${i}`);
  const tagged = (i: number) => i % 3 !== 0;

  it("gives each eligible player the variant of their bucket, to a reader key, recording nothing", async () => {
    await svc.postOk(
      "/v1/players/update",
      {
        players: players
          .filter((_, i) => tagged(i))
          .slice(0, 100)
          .map((id) => ({ partner_user_id: id, tags: ["eligible"] })),
      },
      launch.privateKey,
    );
    await svc.postOk(
      "/v1/players/update",
      {
        players: players
          .filter((_, i) => tagged(i))
          .slice(100)
          .map((id) => ({ partner_user_id: id, tags: ["eligible"] })),
      },
      launch.privateKey,
    );
    await updateOk({ ...weighted, state: "running" });
    const before = await exposures();
    const answers = await Promise.all(players.map((id) => evaluate(id, reader)));
    players.forEach((id, i) => {
      const model = { identityKey: `u:${id}`, tags: tagged(i) ? ["eligible"] : [], traits: {} };
      const expected = modelEligible(weighted, model)
        ? modelVariant(launch.projectId, weighted, model.identityKey)
        : undefined;
      expect(answers[i].experiments["shop.layout"], id).toBe(expected);
    });
    const counts = new Map<string, number>();
    for (const answer of answers) {
      const variant = answer.experiments["shop.layout"];
      if (variant) counts.set(variant, (counts.get(variant) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(["control", "grid", "list"]);
    expect(await exposures()).toEqual(before);
  });

  it("records a private key's answers once, and keeps each exposed player's variant after the weights change", async () => {
    const started = svc.clock.now().getTime();
    const exposed = players.filter((_, i) => tagged(i)).slice(0, 100);
    const first = await Promise.all(exposed.map((id) => evaluate(id, launch.privateKey)));
    const recorded = await exposures();
    exposed.forEach((id, i) => {
      const exposure = recorded.get(`shop.layout/u:${id}`)!;
      expect(exposure.variant).toBe(first[i].experiments["shop.layout"]);
      expect(exposure.exposed_at.getTime()).toBeGreaterThanOrEqual(started - 1_000);
    });

    const reversed: ModelExperiment = {
      ...weighted,
      variants: [...weighted.variants].reverse().map((v, i) => ({ ...v, weight: [9, 1, 0.25][i] })),
    };
    await updateOk({ ...reversed, control: "control", state: "running" });
    for (const key of [launch.privateKey, reader]) {
      const again = await Promise.all(exposed.map((id) => evaluate(id, key)));
      expect(again.map((answer) => answer.experiments["shop.layout"])).toEqual(
        first.map((a) => a.experiments["shop.layout"]),
      );
    }
    // Players not exposed yet follow the weights now.
    const fresh = players.filter((_, i) => tagged(i)).slice(100);
    const now = await Promise.all(fresh.map((id) => evaluate(id, reader)));
    expect(now.map((answer) => answer.experiments["shop.layout"])).toEqual(
      fresh.map((id) => modelVariant(launch.projectId, reversed, `u:${id}`)),
    );
    const changed = exposed.filter(
      (id, i) => modelVariant(launch.projectId, reversed, `u:${id}`) !== first[i].experiments["shop.layout"],
    );
    expect(changed.length).toBeGreaterThan(20);
    expect((await exposures()).size).toBe(recorded.size);
  });

  it("records exactly one exposure of a player under 64 concurrent verifies and evaluations, all answering its variant", async () => {
    await svc.postOk(
      "/v1/players/link",
      { platform_user_id: launch.platformUserId, partner_user_id: "racer" },
      launch.privateKey,
    );
    await updateOk({ name: "race", variants: [...two, { name: "c", weight: 1 }], state: "running" });
    const tokens = await Promise.all(Array.from({ length: 32 }, () => launch.issue()));
    const answers = await Promise.all([
      ...tokens.map(async ({ token }) => (await launch.verify(token)).body),
      ...Array.from({ length: 32 }, () => evaluate("racer", launch.privateKey)),
    ]);
    expect(answers.filter((answer) => "valid" in answer).every((answer) => answer.valid)).toBe(true);
    const variants = new Set(answers.map((answer) => answer.experiments.race));
    expect(variants.size).toBe(1);
    const recorded = [...(await exposures())].filter(([id]) => id.startsWith("race/"));
    expect(recorded).toEqual([["race/u:racer", { variant: [...variants][0], exposed_at: expect.any(Date) }]]);
  });

  it("returns a stopped or draft experiment to no one and records no exposure for it", async () => {
    await updateOk({ name: "race", state: "stopped" });
    await updateOk({ name: "later", variants: two, state: "draft" });
    const before = await exposures();
    const { token } = await launch.issue();
    const verified = (await launch.verify(token)).body;
    expect(verified.valid).toBe(true);
    expect(Object.keys(verified.experiments)).not.toContain("race");
    const evaluated = await evaluate("someone-new", launch.privateKey);
    expect(Object.keys(evaluated.experiments)).toEqual([]);
    expect(await exposures()).toEqual(before);
  });
});
