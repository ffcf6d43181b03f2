import type { Clock } from "../../clock.js";
import type { Rejection } from "../../errors.js";
import { stepsOf, type StepTimer } from "../../steps.js";
import type { RetentionWindow } from "../rollup-keys.js";
import type { EventNameStore } from "../rollups/event-name-store.js";
import type { Backpressure } from "./backpressure.js";
import { checkEvent, type EventRejectCode, type IncomingEvent, type QueuedEvent } from "./entries.js";
import type { Lag } from "./lag.js";
import type { QueueWriter } from "./queue-writer.js";

export interface IngestOutcome {
  accepted: number;
  rejected: ({ index: number } & Rejection<EventRejectCode>)[];
  lag: Lag;
  /** The time the events were checked against, and the timestamp of those sent without one. */
  serverTime: Date;
}

export interface IngestDeps {
  backpressure: Backpressure;
  clock: Clock;
  window: RetentionWindow;
  names: EventNameStore;
  writer: QueueWriter;
  steps: StepTimer;
}

interface Checked {
  valid: { index: number; event: QueuedEvent }[];
  rejected: IngestOutcome["rejected"];
}

/**
 * `POST /v1/events`: accepts the valid events durably and answers at once (unless the queue is too far behind); the
 * apply worker applies them later.
 */
export async function ingest(
  deps: IngestDeps,
  projectId: string,
  events: readonly IncomingEvent[],
): Promise<IngestOutcome> {
  const step = stepsOf("ingest", deps.steps);
  const lag = await step("admit", () => deps.backpressure.admit(projectId, events.length));
  const now = deps.clock.now();
  const checked = await step("check", () => checkEvents(events, now, deps.window.oldest(now)));
  const accepted = await step("names", () => admitNames(deps.names, projectId, checked));
  if (accepted.length > 0) {
    await step("enqueue", () =>
      deps.writer.enqueue(projectId, { kind: "events", events: accepted }, accepted.length, now),
    );
  }
  const rejected = checked.rejected.sort((a, b) => a.index - b.index);
  return { accepted: accepted.length, rejected, lag, serverTime: now };
}

function checkEvents(events: readonly IncomingEvent[], now: Date, oldest: Date): Checked {
  const checked: Checked = { valid: [], rejected: [] };
  for (const [index, event] of events.entries()) {
    const outcome = checkEvent(event, now, oldest);
    if (outcome.ok) checked.valid.push({ index, event: outcome.value });
    else checked.rejected.push({ index, ...outcome.error });
  }
  return checked;
}

/** The valid events of names the project may have (registering new ones); the rest join `rejected`. */
async function admitNames(names: EventNameStore, projectId: string, { valid, rejected }: Checked) {
  const named = await names.admit(projectId, [...new Set(valid.map(({ event }) => event.n))]);
  const accepted: QueuedEvent[] = [];
  for (const { index, event } of valid) {
    if (named.has(event.n)) accepted.push(event);
    else
      rejected.push({
        index,
        code: "name_limit",
        message: `name: the project has ${named.size} event names, the limit`,
      });
  }
  return accepted;
}
