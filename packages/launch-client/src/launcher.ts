import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { createClient, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { LaunchTokenService } from "../gen/platformapi/v1/launch_pb.js";

export interface LaunchDetails {
  platformUserId: string;
  installationId: string;
  gameId: number;
  channelId?: string;
  buildVersion?: string;
}

export interface LauncherOptions {
  /** Base URL of the service, e.g. "http://localhost:8080". */
  baseUrl: string;
  /** A `platform` API key (scope launch:issue). */
  platformKey: string;
  /** How to reach the service; gRPC over HTTP/2 by default. */
  transport?: Transport;
}

/** Issues a launch token and answers the variables to add to the game's environment. */
export async function issueLaunchEnvironment(
  options: LauncherOptions,
  launch: LaunchDetails,
): Promise<Record<string, string>> {
  const client = createClient(
    LaunchTokenService,
    options.transport ?? createGrpcTransport({ baseUrl: options.baseUrl }),
  );
  const answer = await client.issue(
    {
      platformUserId: launch.platformUserId,
      installationId: launch.installationId,
      gameId: launch.gameId,
      channelId: launch.channelId ?? "",
      buildVersion: launch.buildVersion ?? "",
    },
    { headers: { "x-api-key": options.platformKey } },
  );
  return answer.env;
}

/**
 * Issues a token and starts the game with PLATFORM_LAUNCH_TOKEN and
 * PLATFORM_TOKEN_EXPIRES_AT added to its environment (and so to any process
 * it starts). Rejects, starting nothing, when the user does not own the game.
 */
export async function launchGame(
  options: LauncherOptions,
  launch: LaunchDetails,
  command: string,
  args: readonly string[] = [],
  spawnOptions: SpawnOptions = {},
): Promise<ChildProcess> {
  const launchEnv = await issueLaunchEnvironment(options, launch);
  return spawn(command, args, { ...spawnOptions, env: { ...(spawnOptions.env ?? process.env), ...launchEnv } });
}
