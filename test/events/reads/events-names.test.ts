import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";

// A project with many event names: its activity documents must not grow with them (FerretDB reads a document in
// time that grows with its fields), and every name must still be counted.

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/** 40 names (three documents of 16), two days, three players of whom ann is `vip`. */
async function sendManyNames(service: TestService, publicKey: string) {
  await service.postOk("/v1/players/update", { players: [{ partner_user_id: "ann", tags_add: ["vip"] }] }, publicKey);
  const times = eventTimes(service, 2);
  const names = Array.from({ length: 40 }, (_, i) => `level_${i}`);
  const sent = names.flatMap((name, i) =>
    ["ann", "ben", "cat"]
      .slice(0, 1 + (i % 3))
      .flatMap((player) => times.map(({ timestamp, day }) => ({ name, player, day, timestamp }))),
  );
  const body = await service.postOk(
    "/v1/events",
    { events: sent.map(({ name, player, timestamp }) => ({ name, partner_user_id: player, timestamp })) },
    publicKey,
  );
  expect(body.accepted).toBe(sent.length);
  await waitFor(
    () => queueOf(service),
    (q) => q.queue_depth === 0,
  );
  return { sent, days: times.map(({ day }) => day), names };
}

/** The project's activity documents (`<project>/<day>/<name>/<chunk>`): the days and names they hold. */
async function activityDocuments(service: TestService, projectId: string) {
  const docs = await service.database.db
    .collection<{ _id: string }>("event_activity")
    .find({ project_id: projectId }, { projection: { _id: 1 } })
    .toArray();
  return docs.map((doc) => doc._id.split("/"));
}

async function expectCharts(service: TestService, privateKey: string, sent: Awaited<ReturnType<typeof sendManyNames>>) {
  const range = { from: sent.days[0], to: sent.days[1] };
  const trends = async (filter: object) =>
    byName(await service.postOk("/v1/events/trends", { ...range, ...filter }, privateKey));
  expect(await trends({})).toEqual(bruteForce(sent.sent, sent.days));
  const vip = sent.sent.filter((event) => event.player === "ann");
  expect(await trends({ tags: ["vip"] })).toEqual(bruteForce(vip, sent.days));
  const asked = ["level_39", "level_17"];
  expect(await trends({ names: asked })).toEqual(
    new Map([...bruteForce(sent.sent, sent.days)].filter(([name]) => asked.includes(name))),
  );
  const listed = await service.postOk("/v1/events/names", range, privateKey);
  expect(listed.names.map((one: { name: string }) => one.name).sort()).toEqual([...sent.names].sort());
}

describe("many event names", () => {
  it("keeps one name a day in each activity document and counts every name", async () => {
    const { projectId, publicKey, privateKey } = await svc.createProject();
    const sent = await sendManyNames(svc, publicKey);
    await expectCharts(svc, privateKey, sent);
    const documents = await activityDocuments(svc, projectId);
    // One chunk of players (three of them): a document per day and name, whatever the number of names.
    expect(documents.map(([, day, name, chunk]) => `${day} ${name} ${chunk}`).sort()).toEqual(
      sent.days.flatMap((day) => sent.names.map((name) => `${day} ${name} 0`)).sort(),
    );
  });
});
