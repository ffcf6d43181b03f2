import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { loadConfig } from "../../src/config.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventTimes, waitFor } from "../support/service/events.js";
import { ensureGoTool, goUnavailable, type GoTool } from "../support/clients/go-tools.js";
import { clientEnv, createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** main.go, go.mod and go.sum of the client; the generated code is written beside them, under gen/go. */
const CLIENT_DIR = fileURLToPath(new URL("../support/clients/go-client", import.meta.url));
/** The protoc plugins a Go team would use, pinned, from the Go module proxy. */
const PLUGINS: GoTool[] = [
  { module: "google.golang.org/protobuf/cmd/protoc-gen-go", version: "v1.36.12" },
  { module: "google.golang.org/grpc/cmd/protoc-gen-go-grpc", version: "v1.6.2" },
  { module: "connectrpc.com/connect/cmd/protoc-gen-connect-go", version: "v1.21.1" },
];
const EVENT_NAME = "go_client_seen";

/** A hash of every file under dir: the generated code and the client's sources. */
async function hashOfFiles(dir: string): Promise<string> {
  const hash = createHash("sha256");
  const files = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  for (const file of files.map((entry) => path.join(entry.parentPath, entry.name)).sort()) {
    hash.update(path.relative(dir, file)).update(await readFile(file));
  }
  return hash.digest("hex").slice(0, 12);
}

/**
 * Generates Go code from proto/platformapi with buf and the plugins as they are, and builds the client
 * into the project's cache folder, keyed by its sources, so a rerun with the same protos builds nothing.
 */
async function buildClient(work: string): Promise<string> {
  const plugins = [];
  for (const tool of PLUGINS)
    plugins.push({ local: await ensureGoTool(tool), out: work, opt: ["module=platform-backend"] });
  const template = JSON.stringify({ version: "v2", plugins });
  const buf = path.join(ROOT, "node_modules", ".bin", "buf");
  await run(buf, ["generate", "--template", template, "--path", "proto/platformapi"], { cwd: ROOT });
  await cp(CLIENT_DIR, work, { recursive: true });
  const binary = path.join(loadConfig().buildCacheDir, `go-client-${await hashOfFiles(work)}`);
  if (existsSync(binary)) return binary;
  // Go keeps the modules and compiled packages in its own caches; the rename keeps a half-written binary unseen.
  const built = path.join(work, "go-client");
  const env = { ...process.env, GOFLAGS: "-mod=readonly" };
  await run("go", ["build", "-o", built, "."], { cwd: work, timeout: 600_000, env });
  await mkdir(path.dirname(binary), { recursive: true });
  await rename(built, binary);
  return binary;
}

let skip: string | undefined;
let test: TestService;
let launch: LaunchFixture;
let work: string;
let client: string;
let day: string;
beforeAll(async () => {
  skip = await goUnavailable();
  if (skip) {
    process.stderr.write(`go-client.test.ts skipped: ${skip}\n`);
    return;
  }
  work = await mkdtemp(path.join(os.tmpdir(), "go-client-"));
  client = await buildClient(work);
  test = await startTestService();
  launch = await createLaunchFixture(test);
  const [time] = eventTimes(test, 1);
  day = time.day;
  const events = [1, 2].map((n) => ({ name: EVENT_NAME, partner_user_id: `p${n}`, timestamp: time.timestamp }));
  expect((await test.postJson("/v1/events", { events }, launch.privateKey)).status).toBe(200);
  const trends = () =>
    test.postJson("/v1/events/trends", { from: day, to: day, names: [EVENT_NAME] }, launch.privateKey);
  await waitFor(trends, (res) => res.body.series?.[0]?.points?.[0]?.events === 2);
}, 900_000);
afterAll(async () => {
  await test?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe("a Go client generated from proto/ with buf, protoc-gen-go, protoc-gen-go-grpc and protoc-gen-connect-go", () => {
  it("verifies a launch token, updates a player and reads trends over gRPC (grpc-go) and Connect (connect-go)", async (ctx) => {
    if (skip) return ctx.skip(skip);
    const { stdout } = await run(client, [], {
      timeout: 60_000,
      env: {
        ...clientEnv(test, launch),
        DAY: day,
        EVENT_NAME,
      },
    });
    const answered = (protocol: string, refused: string) => ({
      valid: true,
      platform_user_id: launch.platformUserId,
      again: "already_used",
      identity_key: `u:go-${protocol}`,
      tags: ["go_client"],
      trend_events: 2,
      refused,
    });
    expect(JSON.parse(stdout)).toEqual({
      grpc: answered("grpc", "Unauthenticated"),
      connect: answered("connect", "unauthenticated"),
    });
  });
});
