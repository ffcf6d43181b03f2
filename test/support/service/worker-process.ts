import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import readline from "node:readline";
import { inject } from "vitest";
import type { TestService } from "./service.js";

/**
 * Apply workers in processes of their own (event-worker-child.ts) on a test service's database, for suites that
 * kill them; `stopAll` ends those still running.
 */
export class WorkerProcesses {
  private readonly children: ChildProcess[] = [];

  constructor(
    private readonly svc: TestService,
    /** The service's own settings the worker shares (EVENT_SUM_BACKFILL_STEP). */
    private readonly env: Record<string, string> = {},
  ) {}

  /** Starts a worker process; resolves once it printed `line` ("started", or "crash-point" with `crashAt`). */
  async start(line: string, crashAt?: string): Promise<ChildProcess> {
    // Node itself with tsx as a loader, not the tsx wrapper: SIGKILL must reach the worker, not a parent of it.
    const child = spawn(process.execPath, ["--import", "tsx", "test/support/service/event-worker-child.ts"], {
      env: {
        ...process.env,
        ...this.env,
        MONGODB_URI: inject("mongodbUri"),
        DB_NAME: this.svc.config.dbName,
        CRASH_AT: crashAt ?? "",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    this.children.push(child);
    const lines = readline.createInterface({ input: child.stdout! });
    for await (const text of lines) if (text === line) return child;
    throw new Error(`worker exited before printing ${line}`);
  }

  async kill(child: ChildProcess): Promise<void> {
    // An exited child emits no second "exit".
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }

  async stopAll(): Promise<void> {
    for (const child of this.children.splice(0)) await this.kill(child);
  }
}
