import { defaultServerConditions } from "vite";
import { configDefaults, defineConfig } from "vitest/config";

/** Suites that need an engine isolating updates per document (writers in two instances), which FerretDB is not. */
const ISOLATION_ONLY = [
  "test/players/storage/players-instances.test.ts",
  "test/players/storage/players-contention.test.ts",
  "test/players/storage/players-two-instances.test.ts",
  "test/events/apply/events-instances.test.ts",
  "test/events/apply/events-three-instances.test.ts",
  "test/events/apply/events-long-step.test.ts",
  "test/events/reads/events-sums-steps.test.ts",
  "test/launch/launch-two-instances.test.ts",
  "test/config/config-instances.test.ts",
];

/** Suites of the MongoDB path alone: every query rides a declared index, which the embedded engine has none of. */
const MONGODB_ONLY = ["test/db/command-shapes.test.ts", "test/db/kpis-million.test.ts"];

/** Suites of the embedded engine's own behaviour, or of none: they run on it alone. */
const EMBEDDED_ONLY = [
  // Its engine process of their own (`npm start` on a DATA_DIR, or one they start): supervision, stalls and kills, the
  // write-ahead log, the lease and the lock, a stop and a start with a backlog (a freeze under load runs on both:
  // events-freeze starts a server of the run's engine).
  "test/db/db-faults.test.ts",
  "test/db/db-ownership.test.ts",
  "test/db/embedded-mongod.test.ts",
  "test/db/engine-wal.test.ts",
  "test/db/lease.test.ts",
  "test/service/start.test.ts",
  "test/service/shutdown-backlog.test.ts",
  "test/service/start-after-backlog.test.ts",
  // The sole writer's repairs at start (no other instance can be mid-write: every intent left is a round cut short,
  // a registry counter left high is lowered).
  "test/players/cohorts/players-crash.test.ts",
  "test/players/erase/players-erase-crash.test.ts",
  "test/players/rounds/players-registry-faults.test.ts",
  // FerretDB's limit of statements a command, and its query plans.
  "test/db/batched-write.test.ts",
  "test/db/ferretdb-plans.test.ts",
  // No database.
  "test/service/date-sensitive.test.ts",
  "test/service/src-layout.test.ts",
  "test/clients/vendored-proto.test.ts",
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
          exclude: [...configDefaults.exclude, ...ISOLATION_ONLY, ...MONGODB_ONLY],
          globalSetup: ["test/support/db/global-setup.ts"],
        },
      },
      {
        // Every suite again on mongo-java-server, whose updates are isolated per document as MongoDB's are (the
        // engine seam's other side), but those of the embedded engine's own behaviour.
        extends: true,
        test: {
          name: "mongo-java-server",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...EMBEDDED_ONLY],
          globalSetup: ["test/support/db/mongo-java-server-setup.ts"],
        },
      },
    ],
  },
});
