import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pythonVenv, type Python } from "../support/clients/python-venv.js";
import { clientEnv, createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLIENT_SCRIPT = fileURLToPath(new URL("../support/clients/python/launch_client.py", import.meta.url));
/** Pinned from PyPI: grpcio-tools carries protoc and its plugin; protobuf is the runtime of the generated code. */
const PACKAGES = ["grpcio==1.76.0", "grpcio-tools==1.76.0", "protobuf==6.33.6"];

/** Every .proto of the API and of the vendored google.api and buf.validate, relative to proto/. */
async function protoFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const folder of ["platformapi/v1", "google/api", "buf/validate"]) {
    const names = await readdir(path.join(ROOT, "proto", folder));
    files.push(...names.filter((name) => name.endsWith(".proto")).map((name) => `${folder}/${name}`));
  }
  return files;
}

let setup: Python;
let test: TestService;
let launch: LaunchFixture;
beforeAll(async () => {
  setup = await pythonVenv("python-grpc", PACKAGES);
  if ("skip" in setup) {
    process.stderr.write(`python-client.test.ts skipped: ${setup.skip}\n`);
    return;
  }
  test = await startTestService();
  launch = await createLaunchFixture(test);
}, 600_000);
afterAll(() => test?.stop());

describe("a Python grpcio client generated from proto/", () => {
  it("issues and verifies a launch token over gRPC, and the stdlib platform module still imports", async (ctx) => {
    if ("skip" in setup) return ctx.skip(setup.skip);
    const { python } = setup;
    const out = await mkdtemp(path.join(os.tmpdir(), "python-client-"));
    try {
      // grpc_tools.protoc adds the well-known types (google/protobuf) to the include path itself.
      const protoc = ["-m", "grpc_tools.protoc", "-I", "proto", `--python_out=${out}`, `--grpc_python_out=${out}`];
      await run(python, [...protoc, ...(await protoFiles())], { cwd: ROOT });
      expect(existsSync(path.join(out, "platformapi", "v1", "launch_pb2_grpc.py"))).toBe(true);

      const { stdout } = await run(python, [CLIENT_SCRIPT], {
        timeout: 60_000,
        env: {
          PATH: process.env.PATH,
          GEN_DIR: out,
          ...clientEnv(test, launch),
        },
      });
      const answer = JSON.parse(stdout);
      expect(answer).toEqual({
        stdlib_platform: true,
        token_parts: 3,
        env: { PLATFORM_LAUNCH_TOKEN: expect.any(String), PLATFORM_TOKEN_EXPIRES_AT: answer.expires_at },
        expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        valid: true,
        platform_user_id: launch.platformUserId,
        installation_id: launch.installationId,
        has_error: false,
        issued_at_set: true,
        entitlement: { owns: true, game_id: launch.gameId, channel_id: "beta", build_version: "1.2.3" },
        again: { valid: false, error: "already_used", has_platform_user_id: false },
        refused: "UNAUTHENTICATED",
      });
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});
