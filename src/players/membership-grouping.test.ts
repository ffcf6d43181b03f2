import { describe, expect, it } from "vitest";
import { membersByProject } from "./membership-repair.js";
import { bucketOf, byBucket, MEMBERSHIP_BUCKETS } from "./membership-buckets.js";

// 200,000 members of one tag: copying the group on every push (quadratic) would not finish within the test's time.
const MEMBERS = 200_000;
const keys = Array.from({ length: MEMBERS }, (_, i) => `u:player-${i}`);

describe("grouping a large tag's members", () => {
  it("byBucket puts every key in its bucket, in order", () => {
    const buckets = byBucket(keys);
    expect(buckets.size).toBe(MEMBERSHIP_BUCKETS);
    expect([...buckets.values()].reduce((n, members) => n + members.length, 0)).toBe(MEMBERS);
    for (const [bucket, members] of buckets) {
      expect(members.every((key) => bucketOf(key) === bucket)).toBe(true);
      expect(members).toEqual(keys.filter((key) => bucketOf(key) === bucket));
    }
  });

  it("membersByProject gathers each project's tags from the profiles", async () => {
    async function* profiles() {
      for (const identityKey of keys) yield { projectId: "p1", identityKey, tags: ["all", "other"] };
      yield { projectId: "p2", identityKey: "u:alone", tags: ["all"] };
    }
    const projects = await membersByProject(profiles());
    expect(projects.get("p1")?.get("all")).toEqual(keys);
    expect(projects.get("p1")?.get("other")).toEqual(keys);
    expect(projects.get("p2")).toEqual(new Map([["all", ["u:alone"]]]));
  });
});
