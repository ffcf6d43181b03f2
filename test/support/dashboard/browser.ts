import { accessSync, constants } from "node:fs";
import path from "node:path";

const NAMES = ["chromium", "chromium-browser"];

/** Debian's Chromium on PATH (`apt-get install -y chromium`); undefined when there is none. */
export function findChromium(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    for (const name of NAMES) {
      const candidate = path.join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/**
 * The browser suite runs where Chromium is installed; without it the run says so in one line and skips it, unless
 * REQUIRE_BROWSER=1 (CI), which makes a missing browser a failure.
 */
export function chromiumOrSkip(): string | undefined {
  const chromium = findChromium();
  if (chromium) return chromium;
  if (process.env.REQUIRE_BROWSER === "1") throw new Error("REQUIRE_BROWSER=1 but no chromium on PATH");
  process.stderr.write("browser suite skipped: no chromium on PATH (apt-get install -y chromium)\n");
  return undefined;
}
