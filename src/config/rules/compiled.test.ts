import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BUCKETS, bucketOf } from "./bucket.js";
import { compileConfig, decide, valueFor, variantFor, type ConfigPlayer } from "./compiled.js";
import type { ConfigEntry } from "./entry.js";
import type { Experiment } from "./experiment.js";

const PROJECT = "prj_rules";
const everyone = { tags: [], tagsMatch: "any" as const, traits: [], tagsNone: [] };
const player = (identityKey: string, tags: string[] = []): ConfigPlayer => ({
  identityKey,
  cohorts: { tags, traits: new Map() },
});
/** The first identity key whose bucket for `name` is `bucket`. */
function keyInBucket(name: string, bucket: number): string {
  for (let i = 0; ; i++) if (bucketOf(PROJECT, name, `u:${i}`) === bucket) return `u:${i}`;
}

describe("bucketOf", () => {
  it("is the first 32 bits of SHA-256 of project, name and identity key, modulo 10,000", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (name, key) => {
        const digest = createHash("sha256").update(`${PROJECT}/${name}/${key}`, "utf8").digest();
        expect(bucketOf(PROJECT, name, key)).toBe(digest.readUInt32BE(0) % BUCKETS);
      }),
    );
  });
});

describe("a rollout", () => {
  const entry = (percent: number): ConfigEntry => ({
    key: "flag",
    defaultValue: "off",
    rules: [{ cohort: everyone, rolloutPercent: percent, value: "on" }],
    inLaunch: true,
  });
  it.each([
    [12.34, 1233, "on"],
    [12.34, 1234, "off"],
    [0, 0, "off"],
    [100, 9999, "on"],
    [0.01, 0, "on"],
    [0.01, 1, "off"],
  ])("of %d% gives bucket %d %s", (percent, bucket, value) => {
    const config = compileConfig(PROJECT, 1, [entry(percent)], []);
    const compiled = config.entries.get("flag")!;
    expect(valueFor(config, compiled, player(keyInBucket("flag", bucket))).json).toBe(value);
  });

  it("lets a player out of a rule's rollout fall to the next rule", () => {
    const rules = [
      { cohort: everyone, rolloutPercent: 0, value: "never" },
      { cohort: { ...everyone, tags: ["vip"] }, rolloutPercent: null, value: "vip" },
    ];
    const config = compileConfig(PROJECT, 1, [{ key: "k", defaultValue: "d", rules, inLaunch: false }], []);
    expect(decide(config, player("u:a", ["vip"]), ["k"]).config.get("k")!.json).toBe("vip");
    expect(decide(config, player("u:a"), ["k"]).config.get("k")!.json).toBe("d");
    // Without keys: the in_launch entries, none here.
    expect(decide(config, player("u:a")).config.size).toBe(0);
  });
});

describe("an assignment", () => {
  const experiment = (weights: number[], state: Experiment["state"] = "running"): Experiment => ({
    name: "exp",
    variants: weights.map((weight, i) => ({ name: `v${i}`, weight })),
    control: "v0",
    cohort: everyone,
    state,
    hasRun: true,
  });

  it("gives each variant the buckets of its share of the weights, in order", () => {
    const config = compileConfig(PROJECT, 1, [], [experiment([1, 2, 1])]);
    const [running] = config.running;
    // Shares 2,500, 5,000 and 2,500 buckets: 0-2499, 2500-7499, 7500-9999.
    for (const [bucket, variant] of [
      [0, "v0"],
      [2499, "v0"],
      [2500, "v1"],
      [7499, "v1"],
      [7500, "v2"],
      [9999, "v2"],
    ] as const) {
      expect(variantFor(config, running, keyInBucket("exp", bucket)), `bucket ${bucket}`).toBe(variant);
    }
  });

  it("makes only running experiments eligible", () => {
    const config = compileConfig(
      PROJECT,
      1,
      [],
      [experiment([1, 1], "draft"), { ...experiment([1, 1], "stopped"), name: "b" }],
    );
    expect(decide(config, player("u:a")).eligible).toEqual([]);
  });
});
