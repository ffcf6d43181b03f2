import { randomUUID } from "node:crypto";
import type { EntitlementStore } from "../../../src/admin/entitlement-store.js";
import { ADMIN_KEY, type TestService } from "./service.js";

export interface LaunchFixture {
  projectId: string;
  gameId: number;
  privateKey: string;
  publicKey: string;
  platformKey: string;
  platformUserId: string;
  installationId: string;
  /** Issues a token for this fixture's user and game over /v1 JSON. */
  issue(
    overrides?: Record<string, unknown>,
  ): Promise<{ token: string; expires_at: string; env: Record<string, string> }>;
  verify(token: string, key?: string): Promise<{ status: number; body: any }>;
  setOwnership(owns: boolean): Promise<void>;
}

/** A project whose user owns its game, with a platform key to issue launch tokens. */
export async function createLaunchFixture(test: TestService): Promise<LaunchFixture> {
  const project = await test.createProject("Launch Game");
  const { key: platformKey } = await test.createKey("platform");
  const platformUserId = randomUUID();
  const installationId = randomUUID();
  const fixture: LaunchFixture = {
    ...project,
    platformKey,
    platformUserId,
    installationId,
    async setOwnership(owns) {
      const res = await test.postJson(
        "/v1/admin/entitlements",
        {
          platform_user_id: platformUserId,
          game_id: project.gameId,
          owns,
          source: "STORE",
          channel_id: "stable",
          build_version: "1.0.0",
        },
        ADMIN_KEY,
      );
      if (res.status !== 200) throw new Error(`setOwnership: ${res.status} ${JSON.stringify(res.body)}`);
    },
    async issue(overrides = {}) {
      const res = await test.postJson(
        "/v1/launch_tokens/issue",
        {
          platform_user_id: platformUserId,
          installation_id: installationId,
          game_id: project.gameId,
          channel_id: "beta",
          build_version: "1.2.3",
          ...overrides,
        },
        platformKey,
      );
      if (res.status !== 200) throw new Error(`issue: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    verify(token, key = project.privateKey) {
      return test.postJson("/v1/launch_tokens/verify", { token }, key);
    },
  };
  await fixture.setOwnership(true);
  return fixture;
}

/** Writes `user`'s ownership of `gameId` straight through `store`, as the admin API does. */
export function entitle(store: EntitlementStore, user: string, gameId: number, owns: boolean): Promise<void> {
  return store.upsertEntitlement({
    platformUserId: user,
    gameId,
    owns,
    source: "S",
    channelId: "s",
    buildVersion: "1",
    updatedAt: new Date(),
  });
}

/** The environment of a client script of another language: the service's gRPC address, the fixture's keys and ids. */
export function clientEnv(test: TestService, launch: LaunchFixture): Record<string, string> {
  return {
    TARGET: `127.0.0.1:${test.service.port}`,
    PLATFORM_KEY: launch.platformKey,
    STUDIO_KEY: launch.privateKey,
    USER_ID: launch.platformUserId,
    INSTALLATION_ID: launch.installationId,
    GAME_ID: String(launch.gameId),
  };
}
