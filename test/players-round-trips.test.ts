import type { CommandStartedEvent, CommandSucceededEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "./support/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/** The players and event-queue commands the service sends during `call` (the worker's polling left out), with their order. */
async function commandsOf(call: () => Promise<unknown>) {
  const names = new Map<number, string>();
  const timeline: { at: "start" | "end"; requestId: number }[] = [];
  const { client } = svc.database;
  const onStarted = (event: CommandStartedEvent) => {
    const collection = String(event.command[event.commandName] ?? "");
    if (!collection.startsWith("player_") && event.commandName !== "findAndModify" && collection !== "event_segments")
      return;
    names.set(event.requestId, `${event.commandName} ${collection}`);
    timeline.push({ at: "start", requestId: event.requestId });
  };
  const onSucceeded = (event: CommandSucceededEvent) => timeline.push({ at: "end", requestId: event.requestId });
  client.on("commandStarted", onStarted).on("commandSucceeded", onSucceeded);
  try {
    await call();
  } finally {
    client.off("commandStarted", onStarted).off("commandSucceeded", onSucceeded);
  }
  const started = timeline.filter((step) => step.at === "start").map((step) => names.get(step.requestId)!);
  const when = (name: string, at: "start" | "end") => {
    const id = [...names].find(([, n]) => n === name)?.[0];
    return timeline.findIndex((step) => step.requestId === id && step.at === at);
  };
  /** Whether the first commands named `a` and `b` were in flight at once: each started before the other ended. */
  const sideBySide = (a: string, b: string) =>
    when(a, "start") >= 0 &&
    when(b, "start") >= 0 &&
    when(a, "start") < when(b, "end") &&
    when(b, "start") < when(a, "end");
  return { started, sideBySide };
}

describe("players/update round trips", () => {
  it("a write that changes no tag or trait reads and writes the profile, and no journal, registry or event queue", async () => {
    const { publicKey } = await svc.createProject();
    const write = () =>
      svc.postJson(
        "/v1/players/update",
        { players: [{ partner_user_id: "steady", tags_add: ["regular"], traits: { tier: "gold" } }] },
        publicKey,
      );
    expect((await write()).status).toBe(200);

    const { started } = await commandsOf(async () => expect((await write()).status).toBe(200));
    expect(started).toContain("find player_profiles");
    expect(started).toContain("update player_profiles");
    expect(
      started.filter((name) => /journal|registry|player_tags|findAndModify|insert event_segments/.test(name)),
    ).toEqual([]);
  });

  it("a tag change of a registered tag: no registry command, and membership, counts and the event resync side by side", async () => {
    const { publicKey } = await svc.createProject();
    const update = (partner_user_id: string, tags_add: string[]) =>
      svc.postJson("/v1/players/update", { players: [{ partner_user_id, tags_add }] }, publicKey);
    expect((await update("someone", ["known_0", "known_1", "known_2"])).status).toBe(200);

    // Sent one after another, two commands are never in flight together; sent side by side, they are unless one
    // waits for a connection on a loaded machine: so any of three tag changes shows it.
    const overlaps = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const { started, sideBySide } = await commandsOf(async () =>
        expect((await update("mover", [`known_${i}`])).status).toBe(200),
      );
      expect(started.filter((name) => /registry|player_tags /.test(name))).toEqual([]);
      expect(started.indexOf("insert player_membership_journal")).toBeGreaterThanOrEqual(0);
      expect(started.indexOf("insert player_membership_journal")).toBeLessThan(
        started.indexOf("update player_profiles"),
      );
      // A membership write reads its buckets, then writes them back: either command overlapping counts.
      const withMembership = (other: string) =>
        sideBySide("find player_tag_members", other) || sideBySide("update player_tag_members", other);
      if (withMembership("findAndModify event_queue")) overlaps.add("membership ‖ resync");
      if (withMembership("update player_tag_stats")) overlaps.add("membership ‖ counts");
    }
    expect(overlaps).toEqual(new Set(["membership ‖ resync", "membership ‖ counts"]));
  });
});
