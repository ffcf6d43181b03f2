// The game: reads its launch token early, never logs it, and asks the studio backend what it may do.
// Started by examples/launcher.ts; STUDIO_URL defaults to http://localhost:3000/session.
import { readLaunchToken, redactLaunchToken } from "@platformapi/launch-client";

const token = readLaunchToken();
process.stdout.write(
  `game: environment as a crash report would show it: ${JSON.stringify(redactLaunchToken({ env: process.env }).env.PLATFORM_LAUNCH_TOKEN)}\n`,
);
if (!token) {
  process.stdout.write("game: no usable launch token: single-player only\n");
} else {
  try {
    const res = await fetch(process.env.STUDIO_URL ?? "http://localhost:3000/session", {
      method: "POST",
      body: JSON.stringify({ token }),
    });
    process.stdout.write(`game: studio backend says ${await res.text()}\n`);
  } catch {
    // The recommended policy: the studio backend being down never blocks single-player.
    process.stdout.write("game: studio backend unreachable: single-player only\n");
  }
}
