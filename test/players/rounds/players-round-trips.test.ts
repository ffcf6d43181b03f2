import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandsOf } from "../../support/commands.js";
import { ownerRoundsDone } from "../../support/service/metrics.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/**
 * The players and event-queue commands the service starts during `call` and until what the owner writes behind it is
 * done (the worker's polling left out), in order.
 */
const playerCommandsOf = async (call: () => Promise<unknown>) =>
  (
    await commandsOf(
      svc.database.client,
      async () => {
        await call();
        await ownerRoundsDone(svc);
      },
      { background: true },
    )
  ).filter(
    (name) =>
      name.includes(" player_") ||
      name.startsWith("findAndModify ") ||
      name.endsWith(" event_segments") ||
      name.endsWith(" player_changes"),
  );

describe("players/update round trips", () => {
  it("a write that changes nothing reads the owner's memory and sends nothing: no profile, change record, registry or event queue", async () => {
    const { publicKey } = await svc.createProject();
    const write = () =>
      svc.postJson(
        "/v1/players/update",
        { players: [{ partner_user_id: "steady", tags_add: ["regular"], traits: { tier: "gold" } }] },
        publicKey,
      );
    expect((await write()).status).toBe(200);
    await ownerRoundsDone(svc);

    // The embedded engine's owner filled its memory of the project's profiles at the first write.
    expect(await playerCommandsOf(async () => expect((await write()).status).toBe(200))).toEqual([]);
  });

  it("a tag change of a registered tag: no registry command; its change recorded, the profile, then membership and counts in one write, then the event resync", async () => {
    const { publicKey } = await svc.createProject();
    const update = (partner_user_id: string, tags_add: string[]) =>
      svc.postJson("/v1/players/update", { players: [{ partner_user_id, tags_add }] }, publicKey);
    expect((await update("someone", ["known"])).status).toBe(200);
    await ownerRoundsDone(svc);

    const started = await playerCommandsOf(async () => expect((await update("mover", ["known"])).status).toBe(200));
    expect(started.filter((name) => /registry|player_tags /.test(name))).toEqual([]);
    const at = (name: string) => {
      const index = started.indexOf(name);
      expect(index, `${name} in ${started.join(", ")}`).toBeGreaterThanOrEqual(0);
      return index;
    };
    expect(at("update player_changes")).toBeLessThan(at("update player_profiles"));
    expect(at("update player_tag_members")).toBeGreaterThan(at("update player_profiles"));
    // The resync (its queue counter first) only once membership and counts are written.
    expect(at("findAndModify event_queue")).toBeGreaterThan(at("update player_tag_members"));
  });
});
