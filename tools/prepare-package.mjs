// npm's `prepare` (run on `npm install` and `npm ci` of the repository): builds the workspace packages
// (packages/*, e.g. the client helpers) to JavaScript with types, what their "exports" point at. An install without
// dev dependencies (`npm ci --omit=dev`, as for running the service) has no TypeScript and needs no build: the
// service runs from source through tsx.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import process from "node:process";

try {
  createRequire(import.meta.url).resolve("typescript");
} catch {
  process.stdout.write("prepare: TypeScript is not installed (dev dependencies omitted); packages are not built\n");
  process.exit(0);
}
execFileSync("npm", ["run", "build"], { stdio: "inherit" });
