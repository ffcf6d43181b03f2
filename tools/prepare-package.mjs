// npm's `prepare` (run on `npm install` and when the package is installed from git): builds dist/ for the
// package's consumers. An install without dev dependencies (`npm ci --omit=dev`, as for running the service)
// has no TypeScript and needs no dist/: the service runs from source through tsx.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import process from "node:process";

try {
  createRequire(import.meta.url).resolve("typescript");
} catch {
  process.stdout.write("prepare: TypeScript is not installed (dev dependencies omitted); dist/ is not built\n");
  process.exit(0);
}
execFileSync("npm", ["run", "build"], { stdio: "inherit" });
