import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, startTestService, type TestService } from "./support/service.js";

const run = promisify(execFile);

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

function platformctl(args: string[], env: Record<string, string> = {}) {
  return run("node", ["bin/platformctl.js", "--url", test.baseUrl, ...args], {
    env: { ...process.env, PLATFORM_ADMIN_KEY: ADMIN_KEY, ...env },
  });
}

describe("platformctl", () => {
  it("creates a project, a platform key and an entitlement, printing /v1 JSON", async () => {
    const project = JSON.parse(
      (await platformctl(["projects", "create", "--name", "CLI", "--game-id", "4242"])).stdout,
    );
    expect(project.project).toMatchObject({ name: "CLI", game_id: 4242 });
    expect(project.private_key).toMatch(/^sk_/);

    const key = JSON.parse((await platformctl(["api-keys", "create", "--type", "platform"])).stdout);
    expect(key).toMatchObject({ type: "platform", scopes: ["launch:issue"], project_id: "" });

    const refund = JSON.parse(
      (
        await platformctl([
          "entitlements",
          "set",
          "--user",
          "7f1c2a4e-0000-4000-8000-0000000000aa",
          "--game-id",
          "4242",
          "--no-owns",
        ])
      ).stdout,
    );
    expect(refund.entitlement).toMatchObject({ owns: false, source: "STORE", game_id: 4242 });
  });

  it("fails with the service's message and a non-zero exit", async () => {
    await expect(platformctl(["api-keys", "revoke", "key_missing"])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("no key key_missing"),
    });
  });

  it("never prints the admin key in its help", async () => {
    const { stdout } = await platformctl(["--help"]);
    expect(stdout).not.toContain(ADMIN_KEY);
  });
});
