import { describe, expect, it } from "vitest";
import type { ProfileRecord } from "../rules/profile.js";
import { writtenProfiles } from "./written-profiles.js";

const profile = (tags: string[], traits: [string, string | number][] = []): ProfileRecord => ({
  projectId: "p",
  identityKey: "u:a",
  partnerUserId: "a",
  deviceId: null,
  platformUserId: null,
  tags,
  traits: new Map(traits),
  version: 1,
  firstSeenAt: new Date(0),
  lastSeenAt: new Date(0),
});

const slot = (record: ProfileRecord | null) => ({ profile: record, version: record ? 1 : 0, foldedInto: null });

describe("writtenProfiles", () => {
  it("names the written profiles whose tags or traits changed, every fold, and every device linked", () => {
    const writes = [
      {
        identityKey: "u:same",
        read: slot(profile(["x", "y"], [["t", 1]])),
        next: { profile: profile(["y", "x"], [["t", 1]]) },
      },
      { identityKey: "u:tag", read: slot(profile(["x"])), next: { profile: profile(["x", "z"]) } },
      { identityKey: "u:value", read: slot(profile([], [["t", 1]])), next: { profile: profile([], [["t", 2]]) } },
      { identityKey: "u:key", read: slot(profile([], [["t", 1]])), next: { profile: profile([], [["s", 1]]) } },
      { identityKey: "u:new", read: slot(null), next: { profile: profile(["x"]) } },
      { identityKey: "u:empty", read: slot(null), next: { profile: profile([]) } },
      { identityKey: "d:gone", read: slot(profile([])), next: { foldedInto: "u:tag" } },
      { identityKey: "u:lost", read: slot(profile([])), next: { profile: profile(["x"]) } },
    ];
    const written = new Set(writes.map((w) => w.identityKey).filter((key) => key !== "u:lost"));
    const links = new Map([["tablet", { partnerUserId: "tag", platformUserId: null }]]);

    expect(writtenProfiles(writes, written, links)).toEqual([
      { identityKey: "u:tag", foldedInto: null },
      { identityKey: "u:value", foldedInto: null },
      { identityKey: "u:key", foldedInto: null },
      { identityKey: "u:new", foldedInto: null },
      { identityKey: "d:gone", foldedInto: "u:tag" },
      { identityKey: "d:tablet", foldedInto: "u:tag" },
    ]);
  });
});
