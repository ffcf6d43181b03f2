import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProjectStore } from "../../src/admin/project-store.js";
import { startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

describe("ProjectStore.findProjectByGame", () => {
  it("finds a project made after a miss, and keeps answering from the process once found", async () => {
    const store = new ProjectStore(test.database.db);
    const gameId = 900_000 + Math.floor(Math.random() * 90_000);
    expect(await store.findProjectByGame(gameId)).toBeNull();

    const project = { projectId: `prj_store_${gameId}`, name: "Store test", gameId };
    await store.insertProject(project, test.clock.now());
    expect(await store.findProjectByGame(gameId)).toEqual(project);

    // Projects are never changed or removed, so the answer no longer needs the database.
    await test.database.db.collection("projects").deleteOne({ _id: project.projectId } as never);
    expect(await store.findProjectByGame(gameId)).toEqual(project);
    expect(await new ProjectStore(test.database.db).findProjectByGame(gameId)).toBeNull();
  });
});
