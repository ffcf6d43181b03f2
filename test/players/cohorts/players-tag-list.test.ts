import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repairRegistryCounters } from "../../../src/players/storage/counter-repair.js";
import { playersOn } from "../../support/db/round-points.js";
import { startedDuring } from "../../support/commands.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

describe("players/tags from the project's tag list", () => {
  /** The filters of the players' finds the service sends while `run` runs (not the event worker's, which runs beside). */
  const findsDuring = async (run: () => Promise<unknown>) =>
    (await startedDuring(svc.database.client, run))
      .filter((event) => event.commandName === "find" && String(event.command.find).startsWith("player_"))
      .map((event) => event.command.filter as object);

  it("answers with point reads, reads the records while the list lags the tag counter, and the repair writes it again", async () => {
    const project = await svc.createProject();
    const write = (players: unknown[]) => svc.postJson("/v1/players/update", { players }, project.publicKey);
    const listed = async () =>
      (await svc.postJson("/v1/players/tags", { page: 1 }, project.privateKey)).body.tags.map((t: any) => t.tag);
    await write([{ partner_user_id: "x1", tags: ["alpha", "beta"] }]);
    await write([{ partner_user_id: "x2", tags: ["gamma"] }]);

    const finds = await findsDuring(async () => expect(await listed()).toEqual(["alpha", "beta", "gamma"]));
    expect(finds.length).toBeGreaterThan(0);
    for (const filter of finds) expect(Object.keys(filter)).toEqual(["_id"]);

    // A crash between a registration's record and its copy in the list: the list holds two of the three tags.
    const lists = svc.database.db.collection<{ _id: string; tags: string }>("player_tag_lists");
    const list = await lists.findOne({ _id: project.projectId });
    await lists.updateOne(
      { _id: project.projectId },
      { $set: { tags: JSON.stringify(JSON.parse(list!.tags).slice(0, 2)) } },
    );
    expect(await listed()).toEqual(["alpha", "beta", "gamma"]);

    await repairRegistryCounters({ stores: (await playersOn(svc.database)).stores, lower: false });
    expect(JSON.parse((await lists.findOne({ _id: project.projectId }))!.tags)).toHaveLength(3);
  });
});
