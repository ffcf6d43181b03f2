import { eventTimes, waitFor } from "../support/service/events.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LaunchTokenService } from "../../gen/platformapi/v1/launch_pb.js";
import { Metrics } from "../../src/server/calls/metrics.js";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (comments skipped); throws on a line that is not a sample. */
function parseExposition(text: string): Sample[] {
  return text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample: ${line}`);
      const labels: Record<string, string> = {};
      for (const [, name, value] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
        labels[name] = value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
      }
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

const VERIFY = "platformapi.v1.LaunchTokenService/Verify";
const GET_JWKS = "platformapi.v1.LaunchTokenService/GetJwks";

let test: TestService;
let launch: LaunchFixture;
/** Every secret or caller-chosen value the calls below send or receive. */
const sensitive: string[] = [];

async function scrape(): Promise<Sample[]> {
  const res = await fetch(`${test.baseUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

beforeAll(async () => {
  test = await startTestService();
  launch = await createLaunchFixture(test);
  const grpc = test.client(LaunchTokenService, "grpc");
  const headers = { "x-api-key": launch.privateKey };

  const overGrpc = await launch.issue();
  expect(await grpc.verify({ token: overGrpc.token }, { headers })).toMatchObject({ valid: true });
  expect(await grpc.verify({ token: overGrpc.token }, { headers })).toMatchObject({ error: "already_used" });

  const overJson = await launch.issue();
  const first = await launch.verify(overJson.token);
  expect(first.body).toMatchObject({ valid: true });
  expect((await launch.verify(overJson.token)).body).toMatchObject({ valid: false, error: "already_used" });
  expect((await launch.verify(overJson.token, "")).status).toBe(401);

  await test.client(LaunchTokenService, "connect").getJwks({});
  await test.client(LaunchTokenService, "grpc-web").getJwks({});
  // A command the allow-list does not name, with a name a caller might have chosen.
  await expect(test.database.db.command({ [`probe_${launch.projectId}`]: 1 })).rejects.toThrow();

  sensitive.push(
    ADMIN_KEY,
    launch.privateKey,
    launch.publicKey,
    launch.platformKey,
    launch.projectId,
    launch.platformUserId,
    launch.installationId,
    first.body.partner_user_id,
    overGrpc.token,
    overJson.token,
  );
});
afterAll(() => test.stop());

describe("GET /metrics", () => {
  it("counts verify results", async () => {
    const samples = await scrape();
    const verifications = (result: string) => valueOf(samples, "platform_launch_verifications_total", { result });
    expect(verifications("valid")).toBe(2);
    expect(verifications("already_used")).toBe(2);
    for (const result of ["expired", "invalid_token", "unknown_token"]) expect(verifications(result)).toBe(0);
  });

  it("counts and times requests by method, protocol and code", async () => {
    const samples = await scrape();
    const requests = (method: string, protocol: string, code: string) =>
      valueOf(samples, "platform_rpc_requests_total", { method, protocol, code });
    expect(requests(VERIFY, "grpc", "ok")).toBe(2);
    expect(requests(VERIFY, "json", "ok")).toBe(2);
    expect(requests(VERIFY, "json", "unauthenticated")).toBe(1);
    expect(requests(VERIFY, "connect", "ok")).toBeUndefined();
    expect(requests(GET_JWKS, "connect", "ok")).toBe(1);
    expect(requests(GET_JWKS, "grpc_web", "ok")).toBe(1);
    expect(requests("platformapi.v1.LaunchTokenService/Issue", "json", "ok")).toBe(2);

    const timed = { method: VERIFY, protocol: "grpc" };
    expect(valueOf(samples, "platform_rpc_duration_seconds_count", timed)).toBe(2);
    expect(valueOf(samples, "platform_rpc_duration_seconds_bucket", { ...timed, le: "+Inf" })).toBe(2);
    expect(valueOf(samples, "platform_rpc_duration_seconds_sum", timed)).toBeGreaterThan(0);
  });

  it("times database commands by name and counts failed ones, other names as `other`", async () => {
    const samples = await scrape();
    for (const command of ["insert", "find"]) {
      expect(valueOf(samples, "platform_db_command_duration_seconds_count", { command })).toBeGreaterThan(0);
      expect(valueOf(samples, "platform_db_command_duration_seconds_sum", { command })).toBeGreaterThan(0);
    }
    expect(valueOf(samples, "platform_db_command_errors_total", { command: "other" })).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, "platform_db_command_errors_total", { command: "find" })).toBeUndefined();
  });

  it("times each named step of an update, an ingest, the apply of their segments and a trends read", async () => {
    const project = await test.createProject("steps");
    const [{ timestamp, day }] = eventTimes(test, 1);
    const update = { players: [{ partner_user_id: "stepper", tags_add: ["vip"] }] };
    await test.postOk("/v1/players/update", update, project.publicKey);
    const event = { name: "level_up", partner_user_id: "stepper", timestamp };
    expect(await test.postOk("/v1/events", { events: [event] }, project.publicKey)).toMatchObject({ accepted: 1 });
    await test.postOk("/v1/events/trends", { from: day, to: day, tags: ["vip"] }, project.privateKey);
    const steps = (samples: Sample[], path: string) =>
      samples
        .filter((s) => s.name === "platform_step_seconds_count" && s.labels.path === path && s.value > 0)
        .map((s) => `${s.labels.step} ${s.labels.outcome}`)
        .sort();
    // The event's segment applied: its activity is the apply's last step but the cursor's advance.
    const applied = (samples: Sample[]) => steps(samples, "apply").includes("activity ok");
    const samples = await waitFor(
      scrape,
      (samples) => applied(samples) && steps(samples, "apply").includes("advance ok"),
    );
    expect(steps(samples, "update")).toEqual(["commit ok", "decide ok", "fold ok", "follow ok", "links ok", "read ok"]);
    expect(steps(samples, "ingest")).toEqual(["admit ok", "check ok", "enqueue ok", "names ok"]);
    expect(steps(samples, "trends")).toEqual(["counts ok", "freshness ok", "series ok", "split ok"]);
    // Beside them, the steps of the folds earlier tests' links queued (point, move).
    expect(steps(samples, "apply")).toEqual(
      expect.arrayContaining(["activity ok", "advance ok", "claims ok", "numbers ok", "raw ok"]),
    );
  });

  it("times each named step of a players/delete, the erasure's list in rounds/erasure-round.ts", async () => {
    const project = await test.createProject("erasure steps");
    const update = { players: [{ partner_user_id: "leaver", device_id: "leaver-phone", tags_add: ["vip"] }] };
    await test.postOk("/v1/players/update", update, project.publicKey);
    await test.postOk("/v1/players/delete", { partner_user_id: "leaver" }, project.privateKey);
    const steps = (await scrape())
      .filter((s) => s.name === "platform_step_seconds_count" && s.labels.path === "delete" && s.value > 0)
      .map((s) => `${s.labels.step} ${s.labels.outcome}`);
    expect(steps.sort()).toEqual([
      "decide ok",
      "find ok",
      "finish ok",
      "mark ok",
      "record ok",
      "replays ok",
      "settle ok",
    ]);
  });

  it("includes the process metrics", async () => {
    const samples = await scrape();
    expect(valueOf(samples, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(valueOf(samples, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
  });

  it("puts no key, token, id or caller-chosen text in a label", async () => {
    const samples = await scrape();
    const values = new Set(samples.flatMap((s) => Object.values(s.labels)));
    expect(sensitive.every((text) => typeof text === "string" && text.length >= 8)).toBe(true);
    for (const value of values) {
      for (const text of sensitive) expect(value).not.toContain(text);
    }
    const ours = samples.filter((s) => s.name.startsWith("platform_"));
    const labelNames = new Set(ours.flatMap((s) => Object.keys(s.labels)));
    expect([...labelNames].sort()).toEqual([
      "code",
      "command",
      "le",
      "limit",
      "method",
      "outcome",
      "path",
      "protocol",
      "result",
      "step",
    ]);
    for (const s of ours.filter((s) => "path" in s.labels))
      expect(["ingest", "update", "delete", "apply", "trends"]).toContain(s.labels.path);
    for (const s of ours.filter((s) => "limit" in s.labels)) expect(["lag", "queue_size"]).toContain(s.labels.limit);
    for (const s of ours.filter((s) => "method" in s.labels)) {
      expect(s.labels.method).toMatch(/^platformapi\.v1\.[A-Za-z]+Service\/[A-Za-z]+$/);
    }
  });

  it("needs no API key and takes only GET", async () => {
    const res = await fetch(`${test.baseUrl}/metrics`, { method: "POST" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
  });
});

describe("Metrics", () => {
  it("keeps each service's counts in a registry of its own", async () => {
    const one = new Metrics();
    const two = new Metrics();
    one.recordVerification({ valid: true });
    const count = async (metrics: Metrics) =>
      valueOf(parseExposition((await metrics.exposition()).text), "platform_launch_verifications_total", {
        result: "valid",
      });
    expect(await count(one)).toBe(1);
    expect(await count(two)).toBe(0);
  });

  it("reads registered gauges at each scrape and shows a failed reading as NaN", async () => {
    const metrics = new Metrics();
    let depth = 3;
    metrics.gauge("test_queue_depth", "Events waiting.", () => depth);
    metrics.gauge("test_queue_lag_seconds", "Age of the oldest event.", () => Promise.reject(new Error("down")));
    const read = async () => parseExposition((await metrics.exposition()).text);
    expect(valueOf(await read(), "test_queue_depth")).toBe(3);
    depth = 5;
    const samples = await read();
    expect(valueOf(samples, "test_queue_depth")).toBe(5);
    expect(valueOf(samples, "test_queue_lag_seconds")).toBeNaN();
  });

  it("reads a labelled gauge for each of its values, and shows a failed reading as NaN for each", async () => {
    const metrics = new Metrics();
    let reading = Promise.resolve({ lag: 1 } as Record<string, number>);
    metrics.labelledGauge("test_refused", "Refused, by limit.", "limit", ["lag", "queue_size"], () => reading);
    const read = async () => parseExposition((await metrics.exposition()).text);
    let samples = await read();
    expect(valueOf(samples, "test_refused", { limit: "lag" })).toBe(1);
    expect(valueOf(samples, "test_refused", { limit: "queue_size" })).toBeNaN();
    reading = Promise.reject(new Error("down"));
    samples = await read();
    expect(valueOf(samples, "test_refused", { limit: "lag" })).toBeNaN();
  });

  it("counts an unlisted verify error as other", async () => {
    const metrics = new Metrics();
    metrics.recordVerification({ valid: false, error: "some_new_error" });
    const samples = parseExposition((await metrics.exposition()).text);
    expect(valueOf(samples, "platform_launch_verifications_total", { result: "other" })).toBe(1);
    expect(samples.some((s) => s.labels.result === "some_new_error")).toBe(false);
  });
});
