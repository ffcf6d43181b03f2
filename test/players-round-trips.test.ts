import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandsOf } from "./support/commands.js";
import { startTestService, type TestService } from "./support/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/** The players and event-queue commands the service starts during `call` (the worker's polling left out), in order. */
const playerCommandsOf = async (call: () => Promise<unknown>) =>
  (await commandsOf(svc.database.client, call, { background: true })).filter(
    (name) => name.includes(" player_") || name.startsWith("findAndModify ") || name.endsWith(" event_segments"),
  );

describe("players/update round trips", () => {
  it("a write that changes no tag or trait writes the profile (read from the owner's memory), and no journal, registry or event queue", async () => {
    const { publicKey } = await svc.createProject();
    const write = () =>
      svc.postJson(
        "/v1/players/update",
        { players: [{ partner_user_id: "steady", tags_add: ["regular"], traits: { tier: "gold" } }] },
        publicKey,
      );
    expect((await write()).status).toBe(200);

    const started = await playerCommandsOf(async () => expect((await write()).status).toBe(200));
    // The embedded engine's owner filled its memory of the project's profiles at the first write.
    expect(started.filter((name) => name.startsWith("find player_profiles"))).toEqual([]);
    expect(started).toContain("update player_profiles");
    expect(
      started.filter((name) => /journal|registry|player_tags|findAndModify|insert event_segments/.test(name)),
    ).toEqual([]);
  });

  it("a tag change of a registered tag: no registry command; journal, profile, then membership, counts and the event resync, then the journal's end", async () => {
    const { publicKey } = await svc.createProject();
    const update = (partner_user_id: string, tags_add: string[]) =>
      svc.postJson("/v1/players/update", { players: [{ partner_user_id, tags_add }] }, publicKey);
    expect((await update("someone", ["known"])).status).toBe(200);

    const started = await playerCommandsOf(async () => expect((await update("mover", ["known"])).status).toBe(200));
    expect(started.filter((name) => /registry|player_tags /.test(name))).toEqual([]);
    // Only the order each step waits for: the three after the commit point run side by side, in any order.
    const at = (name: string) => {
      const index = started.indexOf(name);
      expect(index, `${name} in ${started.join(", ")}`).toBeGreaterThanOrEqual(0);
      return index;
    };
    const afterCommit = ["find player_tag_members", "update player_tag_stats", "findAndModify event_queue"];
    expect(at("insert player_membership_journal")).toBeLessThan(at("update player_profiles"));
    for (const name of afterCommit) expect(at(name)).toBeGreaterThan(at("update player_profiles"));
    expect(at("update player_tag_members")).toBeGreaterThan(at("find player_tag_members"));
    for (const name of ["update player_tag_members", "update player_tag_stats"]) {
      expect(at("delete player_membership_journal")).toBeGreaterThan(at(name));
    }
  });
});
