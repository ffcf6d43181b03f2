import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // Workspace packages (packages/*) are tested from their TypeScript source, as tsc checks them (tsconfig.json).
  ssr: { resolve: { conditions: ["@platformapi/source", ...defaultServerConditions] } },
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts", "tools/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // The first run on a fresh machine builds FerretDB; later starts take a second.
    hookTimeout: 600_000,
    testTimeout: 60_000,
    // Test files share one database server (each uses its own database); two workers fit 2 cores.
    pool: "forks",
    maxWorkers: 2,
  },
});
