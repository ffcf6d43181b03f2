import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BUCKETS, bucketOf } from "./bucket.js";
import { changedConfig, compileConfig, decide, valueFor, variantFor, type ConfigPlayer } from "./compiled.js";
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

describe("a change compiled in part", () => {
  it("decides as the whole compile of the config it leads to", () => {
    const entry = (key: string, inLaunch: boolean, value: number): ConfigEntry => ({
      key,
      defaultValue: value,
      rules: [{ cohort: { ...everyone, tags: ["vip"] }, rolloutPercent: 50, value: -value }],
      inLaunch,
    });
    const experiment = (name: string, state: Experiment["state"]): Experiment => ({
      name,
      variants: [
        { name: "a", weight: 1 },
        { name: "b", weight: 3 },
      ],
      control: "a",
      cohort: everyone,
      state,
      hasRun: true,
    });
    let config = compileConfig(PROJECT, 1, [entry("b", true, 1), entry("d", false, 2)], [experiment("y", "running")]);
    config = changedConfig(config, 2, { key: "a", entry: entry("a", true, 3) });
    config = changedConfig(config, 3, { key: "d", entry: entry("d", true, 4) });
    config = changedConfig(config, 4, { key: "b", entry: null });
    config = changedConfig(config, 5, { experiment: experiment("x", "running") });
    config = changedConfig(config, 6, { experiment: experiment("y", "stopped") });
    const whole = compileConfig(PROJECT, 6, [entry("a", true, 3), entry("d", true, 4)], [experiment("x", "running")]);
    expect(config.version).toBe(6);
    for (const key of ["u:1", "u:2", "u:3", "u:4"]) {
      const [patched, compiled] = [config, whole].map((c) => decide(c, player(key, ["vip"])));
      expect([...patched.config].map(([k, v]) => [k, v.json])).toEqual(
        [...compiled.config].map(([k, v]) => [k, v.json]),
      );
      expect(patched.eligible.map((e) => e.name)).toEqual(compiled.eligible.map((e) => e.name));
      expect(patched.eligible.map((e) => variantFor(config, e, key))).toEqual(
        compiled.eligible.map((e) => variantFor(whole, e, key)),
      );
    }
  });
});
