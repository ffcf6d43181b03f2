// A studio backend: POST /session {"token": "..."} verifies the launch once and answers what the game may do.
// Run: STUDIO_PRIVATE_KEY=sk_... npx tsx examples/studio-backend.ts   (PLATFORM_URL defaults to http://localhost:8080)
import http from "node:http";
import { createLaunchVerifier, launchAccess } from "@platformapi/launch-client";

const privateKey = process.env.STUDIO_PRIVATE_KEY;
if (!privateKey) {
  process.stderr.write("usage: STUDIO_PRIVATE_KEY=sk_... npx tsx examples/studio-backend.ts\n");
  process.exit(2);
}
const verifier = createLaunchVerifier({ baseUrl: process.env.PLATFORM_URL ?? "http://localhost:8080", privateKey });
const port = Number(process.env.STUDIO_PORT ?? 3000);

http
  .createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    res.setHeader("content-type", "application/json");
    const token = tokenOf(body);
    if (token instanceof Error) {
      res.statusCode = 400;
      res.end(JSON.stringify({ error: token.message }));
      return;
    }
    const check = await verifier.verify(token);
    const access = launchAccess(check);
    const player = check.status === "verified" ? check.launch.partnerUserId : null;
    res.end(JSON.stringify({ player, ...access }));
  })
  .listen(port, () => process.stdout.write(`studio backend on http://localhost:${port}/session\n`));

/** The token of a `{"token": "..."}` body; a body without one is a launch without a token (single-player). */
function tokenOf(body: string): string | undefined | Error {
  try {
    const { token } = JSON.parse(body || "{}") as { token?: unknown };
    if (token === undefined || typeof token === "string") return token;
  } catch {
    // not JSON, or not an object: answered below like a token that is not a string
  }
  return new Error('the body must be JSON: {"token": "<the launch token>"}');
}
