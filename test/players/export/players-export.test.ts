import type { CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlayerService } from "../../../gen/platformapi/v1/players_pb.js";
import { EXPORT_BATCH } from "../../../src/players/search.js";
import { startedDuring } from "../../support/commands.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;

interface Written {
  id: string;
  tags: string[];
  traits: Record<string, string | number | boolean>;
}

// Keys chosen to order differently by UTF-16 units and by code point (U+E000 against an emoji's surrogates).
const IDS = ["p10", "p2", "\uE000x", "😀", "a b", "Z", ...Array.from({ length: 40 }, (_, i) => `m${i}`)];
const WRITTEN: Written[] = IDS.map((id, i) => ({
  id,
  tags: [["vip"], ["team_a"], ["vip", "team_a"], [], ["other"]][i % 5],
  traits: { level: i % 3, region: i % 2 === 0 ? "eu" : "us", ...(i % 7 === 0 && { flag: true }) },
}));

/** The order of identity keys: code points (docs/api.md; MongoDB compares strings' UTF-8 bytes), on every engine. */
const keyOrder = () => byCodePoint;
const byCodePoint = (a: string, b: string) => {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
};

interface Filter {
  tags?: string[];
  tags_match?: "any" | "all";
  tags_none?: string[];
  traits?: Record<string, string | number | boolean>;
}

function bruteForce({ tags = [], tags_match = "any", tags_none = [], traits = {} }: Filter): string[] {
  const normal = (tag: string) => tag.trim().toLowerCase().replace(/\s/g, "_");
  const wanted = tags.map(normal);
  return WRITTEN.filter(
    (player) =>
      (wanted.length === 0 ||
        (tags_match === "all"
          ? wanted.every((t) => player.tags.includes(t))
          : wanted.some((t) => player.tags.includes(t)))) &&
      !tags_none.map(normal).some((t) => player.tags.includes(t)) &&
      Object.entries(traits).every(([key, value]) => player.traits[key] === value),
  )
    .map((player) => `u:${player.id}`)
    .sort(keyOrder());
}

/** The export over /v1: its status, content type and lines parsed. */
async function exportNdjson(body: unknown, key = project.privateKey, service = svc) {
  const res = await fetch(`${service.baseUrl}/v1/players/export`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const lines = res.headers.get("content-type") === "application/x-ndjson" ? text.split("\n") : [];
  expect(lines.pop() ?? "").toBe("");
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    text,
    players: lines.map((l) => JSON.parse(l).player),
  };
}

async function searchAll(body: Filter, key = project.privateKey) {
  const players = [];
  for (let page = 1; ; page++) {
    const answer = await svc.postOk("/v1/players/search", { ...body, page, page_size: 7 }, key);
    players.push(...answer.players);
    if (page >= answer.players_info.pages) return players;
  }
}

async function writePlayers(service: TestService, key: string, players: Written[]) {
  for (let i = 0; i < players.length; i += 100) {
    const batch = players.slice(i, i + 100).map(({ id, tags, traits }) => ({ partner_user_id: id, tags, traits }));
    await service.postOk("/v1/players/update", { players: batch }, key);
  }
}

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
  await writePlayers(svc, project.publicKey, WRITTEN);
  // Another project's players, which no export of the first shows.
  const other = await svc.createProject();
  await writePlayers(svc, other.publicKey, [{ id: "p2", tags: ["vip"], traits: { level: 0 } }]);
});
afterAll(() => svc?.stop());

const FILTERS: Filter[] = [
  {},
  { tags: ["VIP", "Team A"] },
  { tags: ["vip", "team_a"], tags_match: "all" },
  { tags_none: ["vip"] },
  { traits: { level: 1 } },
  { tags: ["vip"], traits: { region: "eu" }, tags_none: ["team_a"] },
  { traits: { flag: true, level: 0 } },
  { tags: ["nobody"] },
];

describe("players/export", () => {
  it.each(FILTERS)(
    "streams NDJSON over /v1 equal to a brute force and to paging through search: %j",
    async (filter) => {
      const answer = await exportNdjson(filter);
      expect(answer.status).toBe(200);
      expect(answer.type).toBe("application/x-ndjson");
      expect(answer.players.map((p) => p.identity_key)).toEqual(bruteForce(filter));
      expect(answer.players).toEqual(await searchAll(filter));
    },
  );

  it("streams the same profiles over gRPC, gRPC-Web and Connect", async () => {
    const filter = { tags: ["vip"], tagsMatch: "any" };
    const expected = bruteForce({ tags: ["vip"] });
    for (const protocol of ["grpc", "grpc-web", "connect"] as const) {
      const keys = [];
      const stream = svc
        .client(PlayerService, protocol)
        .export(filter, { headers: { "x-api-key": project.privateKey } });
      for await (const { player } of stream) keys.push(player?.identityKey);
      expect(keys, protocol).toEqual(expected);
    }
  });

  it("refuses a public key (403) and a bad filter (400, naming the field) with the usual JSON error", async () => {
    const denied = await svc.postJson("/v1/players/export", {}, project.publicKey);
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("permission_denied");
    const bad = await svc.postJson("/v1/players/export", { tags_match: "some" }, project.privateKey);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("tags_match") });
    const reserved = await svc.postJson("/v1/players/export", { traits: { "": "" } }, project.privateKey);
    expect(reserved.status).toBe(400);
    expect(reserved.body).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("traits") });
    const unknown = await svc.postJson("/v1/players/export", { page: 2 }, project.privateKey);
    expect(unknown.status).toBe(400);
  });

  it("leaves out a player created after the export began (its read is fixed at the start)", async () => {
    const fresh = await svc.createProject();
    await writePlayers(svc, fresh.publicKey, WRITTEN);
    await expectLaterPlayerLeftOut(svc, fresh.privateKey, fresh.publicKey);
  });

  it("counts a stream in the metrics when it ends, with the code it ended with", async () => {
    const exportsEnded = async (code: string) => {
      const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
      const labels = `method="platformapi.v1.PlayerService/Export",protocol="json",code="${code}"`;
      const line = text.split("\n").find((l) => l.startsWith(`platform_rpc_requests_total{${labels}}`));
      return line ? Number(line.split(" ").pop()) : 0;
    };
    const [ok, refused] = [await exportsEnded("ok"), await exportsEnded("invalid_argument")];
    // An unusable trait key is refused as the stream begins, after the handler has returned it.
    expect((await svc.postJson("/v1/players/export", { traits: { "": 1 } }, project.privateKey)).status).toBe(400);
    expect((await exportNdjson({})).status).toBe(200);
    expect([await exportsEnded("ok"), await exportsEnded("invalid_argument")]).toEqual([ok + 1, refused + 1]);
  });

  it("shows another project's key only its own players", async () => {
    const other = await svc.createProject();
    expect((await exportNdjson({}, other.privateKey)).players).toEqual([]);
  });
});

describe("players/export of a project read from the database", () => {
  const COUNT = EXPORT_BATCH * 2 + 500;
  let cold: TestService;
  let key: string;
  let publicKey: string;
  const players = Array.from({ length: COUNT }, (_, i) => ({
    id: `q${String(i).padStart(5, "0")}`,
    tags: i % 2 === 0 ? ["even"] : [],
    traits: { n: i },
  }));

  beforeAll(async () => {
    // No cache: the embedded engine reads each profile from the database as MongoDB does.
    cold = await startTestService({ CACHE_MB: "0" });
    const created = await cold.createProject();
    key = created.privateKey;
    publicKey = created.publicKey;
    await writePlayers(cold, created.publicKey, players);
  });
  afterAll(() => cold?.stop());

  it("reads each profile once by `_id`, a batch at a time: EXPORT_BATCH a command (MongoDB), one a command (FerretDB)", async () => {
    let answer: Awaited<ReturnType<typeof exportNdjson>> | undefined;
    const started = await startedDuring(cold.database.client, async () => (answer = await exportNdjson({}, key, cold)));
    expect(answer!.players.map((p) => p.partner_user_id)).toEqual(players.map((p) => p.id));
    const idsOf = (e: CommandStartedEvent): string[] => {
      const id = e.command.filter?._id;
      return typeof id === "string" ? [id] : (id?.$in ?? []);
    };
    const reads = started.filter((e) => e.command.find === "player_profiles").map(idsOf);
    expect(new Set(reads.flat()).size).toBe(COUNT);
    const sizes = cold.database.isFerretDb
      ? Array(COUNT).fill(1)
      : Array.from({ length: Math.ceil(COUNT / EXPORT_BATCH) }, (_, i) =>
          Math.min(EXPORT_BATCH, COUNT - i * EXPORT_BATCH),
        );
    expect(reads.map((ids) => ids.length)).toEqual(sizes);
    const even = await exportNdjson({ tags: ["even"] }, key, cold);
    expect(even.players.map((p) => p.partner_user_id)).toEqual(players.filter((_, i) => i % 2 === 0).map((p) => p.id));
  });

  it("leaves out a player created after the export began (its read is fixed at the start)", async () => {
    await expectLaterPlayerLeftOut(cold, key, publicKey);
  });

  it("serves the next export whole after a client went away mid-stream", async () => {
    const aborted = new AbortController();
    const res = await fetch(`${cold.baseUrl}/v1/players/export`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: "{}",
      signal: aborted.signal,
    });
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect((await res.body!.getReader().read()).done).toBe(false);
    aborted.abort();
    expect((await exportNdjson({}, key, cold)).players).toHaveLength(COUNT + 1);
    expect((await cold.postOk("/v1/players/search", {}, key)).players_info.total).toBe(COUNT + 1);
  });
});

/** A player written once the first line arrived is in no part of that export, and in the next one. */
async function expectLaterPlayerLeftOut(service: TestService, readKey: string, writeKey: string) {
  const res = await fetch(`${service.baseUrl}/v1/players/export`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": readKey },
    body: "{}",
  });
  expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  const reader = res.body!.getReader();
  const first = await reader.read();
  await writePlayers(service, writeKey, [{ id: "zzz-later", tags: ["later"], traits: {} }]);
  let text = new TextDecoder().decode(first.value);
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
    text += new TextDecoder().decode(chunk.value);
  expect(text).not.toContain("zzz-later");
  expect((await exportNdjson({}, readKey, service)).text).toContain("zzz-later");
}
