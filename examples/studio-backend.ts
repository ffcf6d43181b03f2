// A studio backend: POST /session {"token": "..."} verifies the launch once and answers what the game may do.
// Run: STUDIO_PRIVATE_KEY=sk_... npx tsx examples/studio-backend.ts   (PLATFORM_URL defaults to http://localhost:8080)
import http from "node:http";
import { createLaunchVerifier, launchAccess } from "@platformapi/launch-client";

const privateKey = process.env.STUDIO_PRIVATE_KEY;
if (!privateKey) throw new Error("set STUDIO_PRIVATE_KEY to the project's private key");
const verifier = createLaunchVerifier({ baseUrl: process.env.PLATFORM_URL ?? "http://localhost:8080", privateKey });
const port = Number(process.env.STUDIO_PORT ?? 3000);

http
  .createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const token = (JSON.parse(body || "{}") as { token?: string }).token;
    const check = await verifier.verify(token);
    const access = launchAccess(check);
    const player = check.status === "verified" ? check.launch.partnerUserId : null;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ player, ...access }));
  })
  .listen(port, () => process.stdout.write(`studio backend on http://localhost:${port}/session\n`));
