import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  modelValue,
  seededRandom,
  type ModelEntry,
  type ModelPlayer,
  type ModelRule,
} from "../support/models/config-model.js";
import { startTestService, type TestService } from "../support/service/service.js";

// Every rule and rollout of generated entries evaluated for generated players, against the brute force of
// config-model.ts; a rollout's share over 10,000 players, the same at every call and after a restart.

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let reader: string;
/** The rollout's 30,000 evaluations come faster than a key's default rate limit. */
const UNLIMITED = { RATE_LIMIT_PER_SECOND: "0" };
beforeAll(async () => {
  svc = await startTestService(UNLIMITED);
  project = await svc.createProject("Evaluate Game");
  reader = (await svc.createKey("reader", project.projectId)).key;
});
afterAll(() => svc.stop());

const TAGS = ["red", "blue", "green", "gold", "new_player"];
const TRAITS: [string, (string | number | boolean)[]][] = [
  ["tier", ["gold", "silver"]],
  ["level", [1, 2, 3]],
  ["vip", [true, false]],
];

/** `count` items of `list` picked by `random`, each once. */
function pick<T>(random: () => number, list: readonly T[], count: number): T[] {
  return [...list].sort(() => random() - 0.5).slice(0, count);
}
const one = <T>(random: () => number, list: readonly T[]): T => list[Math.floor(random() * list.length)];

function generatedPlayer(random: () => number, identityKey: string): ModelPlayer {
  const traits: Record<string, string | number | boolean> = {};
  for (const [key, values] of TRAITS) if (random() < 0.6) traits[key] = one(random, values);
  return { identityKey, tags: pick(random, TAGS, Math.floor(random() * 4)), traits };
}

function generatedRule(random: () => number, i: number): ModelRule {
  const rule: ModelRule = { value: one(random, [i, `value ${i}`, { i, on: random() < 0.5 }, [i], true, null]) };
  const tags = pick(random, TAGS, Math.floor(random() * 3));
  if (tags.length > 0) rule.tags = tags;
  if (random() < 0.5) rule.tags_match = random() < 0.5 ? "all" : "any";
  if (random() < 0.3) rule.tags_none = pick(random, TAGS, 1);
  if (random() < 0.5) {
    const [key, values] = one(random, TRAITS);
    rule.traits = { [key]: one(random, values) };
  }
  if (random() < 0.5) rule.rollout_percent = one(random, [0, 100, 50, Math.round(random() * 10_000) / 100]);
  return rule;
}

/** As a request sends it: tags in another spelling ("Red", " RED"), which the service normalises as reads do. */
const spelled = (rule: ModelRule, random: () => number) => ({
  ...rule,
  tags: rule.tags?.map((tag) => (random() < 0.5 ? tag.toUpperCase() : ` ${tag[0].toUpperCase()}${tag.slice(1)}`)),
});

async function inBatches<T, R>(items: readonly T[], size: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += size) results.push(...(await Promise.all(items.slice(i, i + size).map(run))));
  return results;
}

describe("every rule and rollout against a brute force", () => {
  it("gives each generated player of each kind the value the brute force gives, for every key", async () => {
    const random = seededRandom(48);
    const partners = Array.from({ length: 120 }, (_, i) => `p${String(i).padStart(3, "0")}`);
    const players = new Map(partners.map((id) => [id, generatedPlayer(random, `u:${id}`)]));
    // Device-only players, and devices linked to a partner (their player is the partner's).
    const devices = Array.from({ length: 12 }, (_, i) => `dev-${i}`);
    const linked = new Map(devices.slice(0, 4).map((device, i) => [device, partners[i]]));
    for (const device of devices.slice(4)) players.set(device, generatedPlayer(random, `d:${device}`));
    // Players with no profile at all: no tags, no traits.
    const bare = Array.from({ length: 10 }, (_, i) => `bare-${i}`);

    const updates = [...players].flatMap(([id, player]) =>
      player.tags.length + Object.keys(player.traits).length === 0
        ? []
        : [
            {
              ...(player.identityKey.startsWith("u:") ? { partner_user_id: id } : { device_id: id }),
              tags: player.tags,
              traits: player.traits,
            },
          ],
    );
    for (let i = 0; i < updates.length; i += 100) {
      await svc.postOk("/v1/players/update", { players: updates.slice(i, i + 100) }, project.privateKey);
    }
    await svc.postOk(
      "/v1/players/update",
      { players: [...linked].map(([device, partner]) => ({ partner_user_id: partner, device_id: device })) },
      project.privateKey,
    );
    const entries: ModelEntry[] = Array.from({ length: 16 }, (_, k) => ({
      key: `key.${k}`,
      default_value: { default: k },
      rules: Array.from({ length: Math.floor(random() * 7) }, (_, i) => generatedRule(random, i)),
      in_launch: random() < 0.5,
    }));
    for (const entry of entries) {
      const rules = entry.rules.map((rule) => spelled(rule, random));
      await svc.postOk("/v1/config/update", { ...entry, rules }, project.privateKey);
    }

    const modelOf = (id: string): ModelPlayer =>
      linked.has(id)
        ? players.get(linked.get(id)!)!
        : (players.get(id) ?? { identityKey: `u:${id}`, tags: [], traits: {} });
    const requests: { partner_user_id?: string; device_id?: string }[] = [
      ...partners.map((id) => ({ partner_user_id: id })),
      ...devices.map((id) => ({ device_id: id })),
      ...bare.map((id) => ({ partner_user_id: id })),
    ];
    const keys = entries.map((entry) => entry.key);
    const answers = await inBatches(requests, 10, (who) => svc.postOk("/v1/config/evaluate", { ...who, keys }, reader));
    let ruled = 0;
    requests.forEach((who, i) => {
      const player = modelOf(who.partner_user_id ?? who.device_id!);
      const expected = Object.fromEntries(
        entries.map((entry) => [entry.key, modelValue(project.projectId, entry, player)]),
      );
      expect(answers[i].config, JSON.stringify(who)).toEqual(expected);
      ruled += entries.filter(
        (entry) => JSON.stringify(expected[entry.key]) !== JSON.stringify(entry.default_value),
      ).length;
    });
    // The generated rules decide for many of them, not just the defaults.
    expect(ruled).toBeGreaterThan(requests.length);

    // Without keys, the in_launch entries alone.
    const launchKeys = entries.filter((entry) => entry.in_launch).map((entry) => entry.key);
    const launch = await svc.postOk("/v1/config/evaluate", { partner_user_id: partners[0] }, reader);
    expect(Object.keys(launch.config).sort()).toEqual(launchKeys.sort());
    // Unknown keys are left out.
    const unknown = await svc.postOk("/v1/config/evaluate", { partner_user_id: partners[0], keys: ["nope"] }, reader);
    expect(unknown.config).toEqual({});
  });
});

describe("a rollout", () => {
  const PLAYERS = 10_000;
  const PERCENT = 37.5;
  const ids = Array.from({ length: PLAYERS }, (_, i) => `r${String(i).padStart(5, "0")}`);
  const evaluateAll = (service: TestService) =>
    inBatches(ids, 25, async (id) => {
      const answer = await service.postOk("/v1/config/evaluate", { partner_user_id: id, keys: ["rollout"] }, reader);
      return answer.config.rollout as boolean;
    });

  it("reaches its share of 10,000 players within binomial bounds, the same players at every call and after a restart", async () => {
    const entry = { key: "rollout", default_value: false, rules: [{ rollout_percent: PERCENT, value: true }] };
    await svc.postOk("/v1/config/update", entry, project.privateKey);
    const first = await evaluateAll(svc);
    const inRollout = first.filter(Boolean).length;
    // 4.5 standard deviations of Binomial(10,000, 0.375) either side: a false alarm about once in 150,000 runs.
    const p = PERCENT / 100;
    const sd = Math.sqrt(PLAYERS * p * (1 - p));
    expect(Math.abs(inRollout - PLAYERS * p)).toBeLessThan(4.5 * sd);
    expect(first).toEqual(
      ids.map((id) => modelValue(project.projectId, entry, { identityKey: `u:${id}`, tags: [], traits: {} })),
    );
    expect(await evaluateAll(svc)).toEqual(first);

    // A restart: another start on the same database.
    await svc.service.close(1_000);
    await svc.database.close();
    svc = await startTestService({ ...UNLIMITED, DB_NAME: svc.config.dbName });
    expect(await evaluateAll(svc)).toEqual(first);
  }, 180_000);
});
