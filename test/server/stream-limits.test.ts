import http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlayerService } from "../../gen/platformapi/v1/players_pb.js";
import { expectError } from "../support/service/raw-requests.js";
import { waitFor } from "../support/service/events.js";
import { startTestService, type TestService } from "../support/service/service.js";

/**
 * players/export and players/data streams are bounded per API key (STREAMS_PER_KEY) and per project
 * (STREAMS_PER_PROJECT), together: past either a newcomer answers 429 with Retry-After, naming what is limited; a
 * stream's place comes back when it ends. A stream is held open by HTTP/2 flow control: its client grants a 1 KiB window and reads
 * nothing, so the service waits after its first lines.
 */
let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
const sessions: http2.ClientHttp2Session[] = [];

beforeAll(async () => {
  svc = await startTestService({ STREAMS_PER_KEY: "2", STREAMS_PER_PROJECT: "3" });
  project = await svc.createProject();
  // 200 profiles: an export's NDJSON is tens of KiB, far past the held window.
  for (let call = 0; call < 2; call++) {
    const players = Array.from({ length: 100 }, (_, i) => ({
      partner_user_id: `player-${call * 100 + i}`,
      tags_add: ["bound"],
      traits: { note: "x".repeat(100) },
    }));
    await svc.postOk("/v1/players/update", { players }, project.privateKey);
  }
});
afterAll(async () => {
  for (const session of sessions) session.destroy();
  await svc.stop();
});

/** A /v1 stream over HTTP/2 whose client reads nothing past a 1 KiB window: open until `session.destroy()`. */
async function heldStream(path: string, body: object, key: string): Promise<http2.ClientHttp2Session> {
  const session = http2.connect(svc.baseUrl, { settings: { initialWindowSize: 1024 } });
  sessions.push(session);
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": "application/json",
    "x-api-key": key,
  });
  stream.end(JSON.stringify(body));
  const status = await new Promise((resolve, reject) => {
    stream.once("response", (headers) => resolve(headers[":status"]));
    stream.once("error", reject);
  });
  expect(status).toBe(200);
  return session;
}

const exportOf = (key: string) => svc.postJson("/v1/players/export", {}, key);

describe("the bound on streams", () => {
  it("refuses a key's stream past STREAMS_PER_KEY, then a project's past STREAMS_PER_PROJECT, and frees them as streams end", async () => {
    const held = [
      await heldStream("/v1/players/export", {}, project.privateKey),
      await heldStream("/v1/players/export", { tags: ["bound"] }, project.privateKey),
    ];
    const perKey = await exportOf(project.privateKey);
    expectError(perKey, 429, "resource_exhausted", "streams");
    expect(perKey.body.message).toMatch(/per API key/);
    expect(Number(perKey.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expectError(
      await svc.postJson("/v1/players/data", { device_id: "d" }, project.privateKey),
      429,
      "resource_exhausted",
    );
    // Over gRPC too; a call that is no stream is not bounded.
    const overGrpc = svc.client(PlayerService).export({}, { headers: { "x-api-key": project.privateKey } });
    await expect(overGrpc[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: Code.ResourceExhausted });
    expect((await svc.postJson("/v1/players/get", { partner_user_id: "player-1" }, project.privateKey)).status).toBe(
      200,
    );

    // The project's third stream through another key; its fourth is refused whatever the key.
    const reader = await svc.createKey("reader", project.projectId);
    expect((await exportOf(reader.key)).body).toHaveLength(200);
    held.push(await heldStream("/v1/players/export", {}, reader.key));
    const perProject = await exportOf((await svc.createKey("reader", project.projectId)).key);
    expectError(perProject, 429, "resource_exhausted", "streams");
    expect(perProject.body.message).toMatch(/per project/);
    // Another project's streams are its own.
    const other = await svc.createProject("Other Game");
    expect((await exportOf(other.privateKey)).status).toBe(200);

    // A stream whose client went away gives its place back.
    held.shift()!.destroy();
    const again = await waitFor(
      () => exportOf(project.privateKey),
      (res) => res.status === 200,
    );
    expect(again.body).toHaveLength(200);
  });
});
