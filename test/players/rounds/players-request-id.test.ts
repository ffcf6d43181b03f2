import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlayerService } from "../../../gen/platformapi/v1/players_pb.js";
import { expectError } from "../../support/service/raw-requests.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let n = 0;
const requestId = () => `retry-${++n}`;

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
});
afterAll(() => svc.stop());

const increment = (player: string) => [{ partner_user_id: player, traits_increment: { coins: 1 }, tags_add: ["vip"] }];
const update = (players: unknown[], request_id?: string) =>
  svc.postJson(
    "/v1/players/update",
    { players, ...(request_id === undefined ? {} : { request_id }) },
    project.publicKey,
  );
async function coins(player: string): Promise<unknown> {
  const res = await svc.postJson("/v1/players/get", { partner_user_id: player }, project.privateKey);
  return res.body.profile?.traits.coins;
}

describe("players/update with a request_id", () => {
  it("answers a retry with the first call's answer and applies the increment once", async () => {
    const id = requestId();
    const first = await update(increment("ann"), id);
    expect(first.status).toBe(200);
    svc.clock.advance(1_000);
    const retry = await update(increment("ann"), id);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    expect(await coins("ann")).toBe(1);
    // Without one, or with another id, the call applies again.
    expect((await update(increment("ann"))).status).toBe(200);
    expect((await update(increment("ann"), requestId())).status).toBe(200);
    expect(await coins("ann")).toBe(3);
  });

  it("answers the same over gRPC as over JSON", async () => {
    const id = requestId();
    const players = [{ partnerUserId: "ben", traitsIncrement: { coins: 1 } }];
    const client = svc.client(PlayerService);
    const headers = { "x-api-key": project.publicKey };
    const first = await client.update({ players, requestId: id }, { headers });
    const retry = await client.update({ players, requestId: id }, { headers });
    expect(retry).toEqual(first);
    expect(await coins("ben")).toBe(1);
  });

  it("refuses the id with other players, and keeps it per project", async () => {
    const id = requestId();
    expect((await update(increment("cat"), id)).status).toBe(200);
    expectError(await update(increment("dan"), id), 409, "already_exists", "request_id");
    expect(await coins("dan")).toBeUndefined();
    const other = await svc.createProject();
    const elsewhere = await svc.postJson(
      "/v1/players/update",
      { players: increment("cat"), request_id: id },
      other.publicKey,
    );
    expect(elsewhere.status).toBe(200);
    expect(await coins("cat")).toBe(1);
  });

  it("frees the id a day after the answer", async () => {
    const id = requestId();
    expect((await update(increment("eve"), id)).status).toBe(200);
    svc.clock.advance(24 * 60 * 60_000 - 1_000);
    expect((await update(increment("eve"), id)).status).toBe(200);
    expect(await coins("eve")).toBe(1);
    svc.clock.advance(2_000);
    expect((await update(increment("eve"), id)).status).toBe(200);
    expect(await coins("eve")).toBe(2);
  });

  it("applies once when the same call arrives 20 times at once: each answers the first call's answer", async () => {
    const id = requestId();
    // A call of 100 players, so the first still runs while the others arrive.
    const players = Array.from({ length: 100 }, (_, i) => increment(`fay${i}`)[0]);
    const answers = await Promise.all(Array.from({ length: 20 }, () => update(players, id)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
    for (const answer of answers) expect(answer.body).toEqual(answers[0].body);
    expect([await coins("fay0"), await coins("fay99")]).toEqual([1, 1]);
    // A call with other players under the id, at once or later, is refused.
    const [again, other] = await Promise.all([update(players, id), update(increment("gil"), id)]);
    expect(again.body).toEqual(answers[0].body);
    expectError(other, 409, "already_exists", "request_id");
  });

  it("waits for a call running elsewhere no longer than its deadline on the id, 30 s; on the sole writer not at all", async () => {
    const id = requestId();
    const players = increment("hal");
    // The claim another instance's call holds while it runs (or left behind, having died), with the fingerprint of
    // these players: the one a call with them keeps in another project.
    const requests = svc.database.db.collection<{ _id: string; fingerprint: string } & Record<string, unknown>>(
      "player_update_requests",
    );
    const elsewhere = await svc.createProject();
    const sent = await svc.postJson("/v1/players/update", { players, request_id: id }, elsewhere.publicKey);
    expect(sent.status).toBe(200);
    const { fingerprint } = (await requests.findOne({ _id: `${elsewhere.projectId}/${id}` }))!;
    await requests.insertOne({
      _id: `${project.projectId}/${id}`,
      project_id: project.projectId,
      fingerprint,
      state: "running",
      owner: "a call of another instance",
      expires_at: new Date(svc.clock.now().getTime() + 30_000),
    });
    const buildInfo = await svc.database.db.admin().command({ buildInfo: 1 });
    if (!("ferretdbVersion" in buildInfo)) {
      // MongoDB: other instances write too; the call there may still run.
      expectError(await update(players, id), 409, "aborted", "request_id");
      svc.clock.advance(30_000);
    }
    // FerretDB: one instance owns the database, so a claim none of its calls holds was left by a call that ended.
    expect((await update(players, id)).status).toBe(200);
    expect(await coins("hal")).toBe(1);
  });

  it("refuses an id over 128 characters, naming it", async () => {
    expectError(await update(increment("gus"), "x".repeat(129)), 400, "invalid_argument", "request_id");
    await expect(
      svc
        .client(PlayerService)
        .update({ players: [], requestId: "x".repeat(129) }, { headers: { "x-api-key": project.publicKey } }),
    ).rejects.toSatisfy((error: unknown) => ConnectError.from(error).code === Code.InvalidArgument);
  });
});
