import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { inject } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";

const CHILD = fileURLToPath(new URL("../../support/service/crash-child.ts", import.meta.url));

/** The service reads the sets as the crash left them: it keeps nothing of what it read (another process wrote). */
const SETS_AS_STORED = { CACHE_MB: "0" };

/** Runs the crash child to its death (see crash-child.ts); resolves with the signal that ended it. */
function crashChild(svc: TestService, projectId: string): Promise<NodeJS.Signals | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", CHILD, inject("mongodbUri"), svc.config.dbName, projectId],
      {
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    child.on("error", reject);
    child.on("exit", (_code, signal) => resolve(signal));
  });
}

/** The crash child's update, then a start on the same database, checking what its repair pass sets right. */
async function crashAndRestart() {
  const svc = await startTestService(SETS_AS_STORED);
  const { projectId, publicKey, privateKey } = await svc.createProject();
  const update = (players: unknown[]) => svc.postJson("/v1/players/update", { players }, publicKey);
  expect((await update([{ partner_user_id: "crash-victim", tags_add: ["before"] }])).status).toBe(200);

  expect(await crashChild(svc, projectId)).toBe("SIGKILL");

  const counts = async (service: TestService) => {
    const res = await service.postJson("/v1/players/tags", { page: 1 }, privateKey);
    return Object.fromEntries(res.body.tags.map((t: any) => [t.tag, t.players_count]));
  };
  const searchCrashed = async (service: TestService) =>
    (await service.postJson("/v1/players/search", { tags: ["crashed"] }, privateKey)).body;
  // The profiles were written; their sets were not.
  const profile = await svc.postJson("/v1/players/get", { partner_user_id: "crash-victim" }, privateKey);
  expect(profile.body.profile.tags).toEqual(["crashed"]);
  expect(await counts(svc)).toEqual({ before: 1, crashed: 0 });
  expect((await searchCrashed(svc)).players_info.total).toBe(0);

  // A start on the same database runs the repair pass.
  await svc.service.close(1_000);
  await svc.database.close();
  const restarted = await startTestService({ ...SETS_AS_STORED, DB_NAME: svc.config.dbName });
  try {
    expect(await counts(restarted)).toEqual({ before: 0, crashed: 2 });
    const found = await searchCrashed(restarted);
    expect(found.players.map((p: any) => p.identity_key)).toEqual(["d:crash-device", "u:crash-victim"]);
    expect(found.players_info.total).toBe(2);
    const before = await restarted.postJson("/v1/players/search", { tags: ["before"] }, privateKey);
    expect(before.body.players).toEqual([]);
  } finally {
    await restarted.service.close(1_000);
    await restarted.database.close();
  }
}

describe("a crash before a round's sets are in the database", () => {
  it("between the profile write and the sets' write: counts and search lag until the next start's repair", async () => {
    await crashAndRestart();
  });
});
