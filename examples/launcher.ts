// The platform launcher: issues a launch token over gRPC and starts the game with it in its environment.
// Run: PLATFORM_KEY=plk_... npx tsx examples/launcher.ts <platform_user_id> <game_id>
import { randomUUID } from "node:crypto";
import { launchGame } from "@platformapi/launch-client";

const [platformUserId, gameId] = process.argv.slice(2);
const platformKey = process.env.PLATFORM_KEY;
if (!platformUserId || !gameId || !platformKey) {
  process.stderr.write("usage: PLATFORM_KEY=plk_... npx tsx examples/launcher.ts <platform_user_id> <game_id>\n");
  process.exit(2);
}

const game = await launchGame(
  { baseUrl: process.env.PLATFORM_URL ?? "http://localhost:8080", platformKey },
  {
    platformUserId,
    installationId: process.env.INSTALLATION_ID ?? randomUUID(),
    gameId: Number(gameId),
    channelId: "stable",
    buildVersion: "1.0.0",
  },
  process.execPath,
  ["--import", "tsx", new URL("game.ts", import.meta.url).pathname],
  { stdio: "inherit" },
);
game.on("exit", (code) => process.stdout.write(`launcher: game exited with ${code}\n`));
