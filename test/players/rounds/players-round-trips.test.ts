import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandsOf } from "../../support/commands.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/**
 * The players and event-queue commands the service starts during `call` (the worker's polling left out), in order: a
 * round writes everything it writes before it answers.
 */
const playerCommandsOf = async (call: () => Promise<unknown>) =>
  (await commandsOf(svc.database.client, call, { background: true })).filter(
    (name) => name.includes(" player_") || name.startsWith("findAndModify ") || name.endsWith(" event_segments"),
  );

describe("players/update round trips", () => {
  it("a write that changes nothing writes nothing (the sole writer reads its cache: no command at all)", async () => {
    const { publicKey } = await svc.createProject();
    const write = () =>
      svc.postJson(
        "/v1/players/update",
        { players: [{ partner_user_id: "steady", tags_add: ["regular"], traits: { tier: "gold" } }] },
        publicKey,
      );
    expect((await write()).status).toBe(200);

    const started = await playerCommandsOf(async () => expect((await write()).status).toBe(200));
    // Another instance may have written the profile: elsewhere it is read, and nothing written.
    const expected = svc.database.isFerretDb ? [] : started.filter((name) => name.startsWith("find "));
    expect(started).toEqual(expected);
  });

  it("a tag change of a registered tag: no registry command; its intent recorded, the profile, then the tag's set, then the intent forgotten; no event queue", async () => {
    const { publicKey } = await svc.createProject();
    const update = (partner_user_id: string, tags_add: string[]) =>
      svc.postJson("/v1/players/update", { players: [{ partner_user_id, tags_add }] }, publicKey);
    expect((await update("someone", ["known"])).status).toBe(200);

    const started = await playerCommandsOf(async () => expect((await update("mover", ["known"])).status).toBe(200));
    expect(started.filter((name) => /registry|player_tags /.test(name))).toEqual([]);
    const at = (name: string) => {
      const index = started.indexOf(name);
      expect(index, `${name} in ${started.join(", ")}`).toBeGreaterThanOrEqual(0);
      return index;
    };
    expect(at("insert player_intents")).toBeLessThan(at("update player_profiles"));
    expect(at("update player_sets")).toBeGreaterThan(at("update player_profiles"));
    expect(at("delete player_intents")).toBeGreaterThan(at("update player_sets"));
    // A tag change is a bit flipped in a set: nothing queued for the apply worker.
    expect(started.filter((name) => name.endsWith(" event_segments"))).toEqual([]);
  });
});
