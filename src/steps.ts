import { performance } from "node:perf_hooks";
import { asUnavailable } from "./db/errors.js";
import { PlatformError, type ErrorCode } from "./errors.js";

/** How a step ended: `ok`, or the code its failure answers with (a database failure is `unavailable`). */
export type StepOutcome = "ok" | ErrorCode;

/** Where each step's time goes: the service's metrics (`platform_step_seconds`). */
export interface StepTimer {
  recordStep(step: { path: string; step: string; outcome: StepOutcome; seconds: number }): void;
}

/** Runs one named step of a request path and times it; the step's failure goes on to the caller unchanged. */
export type Step = <T>(name: string, run: () => T | Promise<T>) => Promise<T>;

/** Where no step is timed: a path's steps when no metrics are kept. */
export const notTimed: StepTimer = { recordStep: () => undefined };

/** Runs a step untimed: a path's steps when they run inside another call's (a fold inside a verify's follow-up). */
export const untimed: Step = async (_name, run) => run();

/**
 * The steps of one call of a request path (`ingest`, `update`, `delete`, `apply`, `trends`), as PostHog's ingestion runner runs its step list:
 * the path's function reads as its named steps in order, each timed into one histogram, and a failure labelled
 * in one place with the code the caller will see.
 */
export function stepsOf(path: string, timer: StepTimer): Step {
  return async (step, run) => {
    const started = performance.now();
    let outcome: StepOutcome = "ok";
    try {
      return await run();
    } catch (error) {
      outcome = outcomeOf(error);
      throw error;
    } finally {
      timer.recordStep({ path, step, outcome, seconds: (performance.now() - started) / 1000 });
    }
  };
}

/** The code a failure answers with, as server/calls/errors.ts maps it: anything unknown is `internal`. */
function outcomeOf(error: unknown): ErrorCode {
  const failure = asUnavailable(error) ?? error;
  return failure instanceof PlatformError ? failure.code : "internal";
}
