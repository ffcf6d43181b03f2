import type { ChildProcess } from "node:child_process";
import { systemClock, type Clock } from "../clock.js";
import type { Logger } from "../log.js";
import { stopProcess } from "./process.js";

export interface SupervisorOptions {
  /** Names the process in log lines. */
  name: string;
  /** Starts one run of the process. */
  spawn: () => ChildProcess;
  /** Resolves once the run serves; rejects (the run is then stopped) if it cannot. */
  ready: (child: ChildProcess) => Promise<void>;
  log: Logger;
  /** Wait before the first restart, doubled after each failed or short run up to `maxBackoffMs`. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A run that served this long resets the wait to `initialBackoffMs`. */
  stableAfterMs?: number;
  clock?: Clock;
}

export interface SupervisedProcess {
  /** The process id of the current run (the one starting, between a death and its restart). */
  readonly pid: number | undefined;
  /** Stops the current run and every restart to come. */
  stop(): Promise<void>;
}

/**
 * Starts a process and restarts it with exponential backoff whenever it dies,
 * until stop(). The first start's failure is thrown to the caller; later
 * failures are logged and retried.
 */
export async function superviseProcess(options: SupervisorOptions): Promise<SupervisedProcess> {
  const { name, spawn, ready, log, clock = systemClock } = options;
  const initialBackoffMs = options.initialBackoffMs ?? 100;
  const maxBackoffMs = options.maxBackoffMs ?? 10_000;
  const stableAfterMs = options.stableAfterMs ?? 30_000;
  let current: ChildProcess | undefined;
  let stopping = false;
  let backoffMs = initialBackoffMs;
  let restartTimer: NodeJS.Timeout | undefined;

  const run = async (): Promise<ChildProcess> => {
    const child = spawn();
    child.on("error", (err) => log.error({ err }, `${name} could not be started or signalled`));
    current = child;
    try {
      await ready(child);
    } catch (error) {
      await stopProcess(child);
      throw error;
    }
    return child;
  };

  const scheduleRestart = (reason: Record<string, unknown>): void => {
    log.error({ ...reason, restartInMs: backoffMs }, `${name} is down; restarting it`);
    restartTimer = setTimeout(() => void restart(), backoffMs);
    backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
  };

  const watch = (child: ChildProcess): void => {
    const servingSince = clock.now().getTime();
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (stopping) return;
      if (clock.now().getTime() - servingSince >= stableAfterMs) backoffMs = initialBackoffMs;
      scheduleRestart({ code, signal });
    };
    if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
    else child.once("exit", onExit);
  };

  const restart = async (): Promise<void> => {
    try {
      const child = await run();
      if (stopping) return await stopProcess(child);
      log.info({ childPid: child.pid }, `${name} restarted`);
      watch(child);
    } catch (err) {
      if (!stopping) scheduleRestart({ err });
    }
  };

  watch(await run());
  return {
    get pid() {
      return current?.pid;
    },
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      if (current) await stopProcess(current);
    },
  };
}
