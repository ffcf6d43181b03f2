import { defaultServerConditions } from "vite";
import { configDefaults, defineConfig } from "vitest/config";

/** Suites that need an engine isolating updates per document (writers in two instances), which FerretDB is not. */
const ISOLATION_ONLY = [
  "test/players-instances.test.ts",
  "test/players-contention.test.ts",
  "test/events-instances.test.ts",
  "test/launch-two-instances.test.ts",
];

export default defineConfig({
  // Workspace packages (packages/*) are tested from their TypeScript source, as tsc checks them (tsconfig.json).
  ssr: { resolve: { conditions: ["@platformapi/source", ...defaultServerConditions] } },
  test: {
    // The first run on a fresh machine builds FerretDB and mongo-java-server; later starts take a second.
    hookTimeout: 600_000,
    testTimeout: 60_000,
    // Test files share one database server per project (each uses its own database); two workers fit 2 cores.
    pool: "forks",
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: "main",
          include: ["test/**/*.test.ts", "src/**/*.test.ts", "tools/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...ISOLATION_ONLY],
          globalSetup: ["test/support/global-setup.ts"],
        },
      },
      {
        // The concurrency suites on mongo-java-server, where the version and count guards decide races; and the
        // read-your-writes suites, whose correction races the apply worker on both engines.
        extends: true,
        test: {
          name: "mongo-java-server",
          include: [
            "test/players-concurrency.test.ts",
            "test/events-as-of-now.test.ts",
            "test/events-as-of-now-property.test.ts",
            "test/events-history-faults.test.ts",
            "test/events-filters.test.ts",
            "test/filters-commands.test.ts",
            "test/events-counters.test.ts",
            "test/events-limits.test.ts",
            "test/events-names.test.ts",
            "test/events-backpressure.test.ts",
            "test/events-cohorts.test.ts",
            "test/events-crash.test.ts",
            "test/events-ingest.test.ts",
            "test/events-queue-state.test.ts",
            "test/events-traits.test.ts",
            "test/events-ahead-reads.test.ts",
            "test/players-request-id.test.ts",
            ...ISOLATION_ONLY,
          ],
          globalSetup: ["test/support/mongo-java-server-setup.ts"],
        },
      },
    ],
  },
});
