import { performance } from "node:perf_hooks";
import { seededRandom } from "../../test/support/models/config-model.js";
import type { Launch, Pool, Target } from "./verify-load.js";

// The verify benchmark's configured project: 1,000 config entries, 50 of them in the launch, 20 rules each, and 10
// running experiments; its players carry tags and traits the rules and eligibility read. Generated from a fixed
// seed, so every run sets up the same project.

export const CONFIGURED = { entries: 1_000, inLaunch: 50, rulesPerEntry: 20, runningExperiments: 10 } as const;

/** Whose tokens a target verifies: service_config the configured project's, every other target the plain one's. */
export const poolOf = (target: Target): Pool => (target === "service_config" ? "configured" : "plain");

const TAGS = Array.from({ length: 20 }, (_, i) => `segment_${i}`);
const TIERS = ["gold", "silver", "bronze"];

type CallJson = (path: string, body: object, key: string) => Promise<any>;

/** Rules as studios write them: a tag or two (any or all), sometimes a tag left out or a trait, half with a rollout. */
function rulesOf(random: () => number, entry: number) {
  const one = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
  return Array.from({ length: CONFIGURED.rulesPerEntry }, (_, i) => ({
    tags: Array.from({ length: 1 + Math.floor(random() * 2) }, () => one(TAGS)),
    tags_match: random() < 0.3 ? "all" : "any",
    ...(random() < 0.3 && { tags_none: [one(TAGS)] }),
    ...(random() < 0.3 && { traits: random() < 0.5 ? { tier: one(TIERS) } : { level: 1 + Math.floor(random() * 10) } }),
    ...(random() < 0.5 && { rollout_percent: Math.round(random() * 10_000) / 100 }),
    value: one([i, `variant_${entry}_${i}`, { layout: `l${i}`, discount: i / 100, enabled: true }, [entry, i]]),
  }));
}

/**
 * Makes `projectKey`'s project the configured one: each launch's platform user linked to a partner id whose profile
 * has four tags and three traits, the entries and the running experiments. Answers, once all is written, how long
 * the first evaluation took (it compiles the project, as the first verify after a change does) and the next one.
 */
export async function configure(call: CallJson, projectKey: string, launches: readonly Launch[]) {
  const random = seededRandom(48);
  const players = launches.map((_, i) => ({
    partner_user_id: `bench-player-${i}`,
    tags: Array.from({ length: 4 }, () => TAGS[Math.floor(random() * TAGS.length)]),
    traits: { tier: TIERS[i % TIERS.length], level: 1 + (i % 10), vip: i % 4 === 0 },
  }));
  for (const [i, launch] of launches.entries()) {
    const link = { platform_user_id: launch.platformUserId, partner_user_id: players[i].partner_user_id };
    await call("/v1/players/link", link, projectKey);
  }
  await call("/v1/players/update", { players }, projectKey);
  const entries = Array.from({ length: CONFIGURED.entries }, (_, e) => ({
    key: `config.key_${e}`,
    default_value: e % 2 === 0 ? e : { key: e, enabled: false },
    rules: rulesOf(random, e),
    // Every 20th entry is in the launch: 50 of 1,000.
    in_launch: e % (CONFIGURED.entries / CONFIGURED.inLaunch) === 0,
  }));
  for (let e = 0; e < entries.length; e += 4) {
    await Promise.all(entries.slice(e, e + 4).map((entry) => call("/v1/config/update", entry, projectKey)));
  }
  for (let x = 0; x < CONFIGURED.runningExperiments; x++) {
    const variants = Array.from({ length: 2 + (x % 3) }, (_, v) => ({ name: `v${v}`, weight: 1 + v }));
    const eligible = x % 2 === 0 ? {} : { tags: [TAGS[x], TAGS[x + 1]] };
    await call(
      "/v1/experiments/update",
      { name: `experiment_${x}`, variants, ...eligible, state: "running" },
      projectKey,
    );
  }
  const evaluation = async () => {
    const started = performance.now();
    await call("/v1/config/evaluate", { partner_user_id: players[0].partner_user_id }, projectKey);
    return Math.round((performance.now() - started) * 10) / 10;
  };
  return { first_evaluate_ms: await evaluation(), next_evaluate_ms: await evaluation() };
}
