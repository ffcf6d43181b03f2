import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { breakProject, bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

/**
 * A project whose every apply fails for good (its counter of player numbers broken) beside four healthy ones: its
 * segment is parked after EVENT_PARK_AFTER_FAILURES failures, and the others' 1,000 segments all apply meanwhile. A
 * call the shared test engine answered 503 (its deadline, on a loaded machine) is sent again as a client would, with
 * the same event_ids; no call may be refused for the queue (429).
 */
const PARK_AFTER = 3;
const CALLS = 1_000;
const EVENTS = 10;
const IN_FLIGHT = 4;

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ EVENT_PARK_AFTER_FAILURES: String(PARK_AFTER) });
});
afterAll(() => svc.stop());

async function parkedMetric(): Promise<number> {
  const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
  return Number(/^platform_event_parked_segments (\S+)$/m.exec(text)?.[1]);
}

describe("a poison project", () => {
  it("is parked; four other projects' 1,000 segments all apply, none refused", { timeout: 300_000 }, async () => {
    const poison = await svc.createProject();
    await breakProject(svc, poison.projectId);
    const healthy = await Promise.all(Array.from({ length: 4 }, () => svc.createProject()));
    const times = eventTimes(svc, 2);
    const days = times.map((t) => t.day);
    const poisoned = await svc.postOk(
      "/v1/events",
      { events: [{ name: "match", partner_user_id: "doomed", timestamp: times[1].timestamp }] },
      poison.publicKey,
    );
    expect(poisoned.accepted).toBe(1);

    const raw = healthy.map(() => [] as { name: string; player: string; day: string }[]);
    const refused: unknown[] = [];
    let next = 0;
    const send = async () => {
      for (let call = next++; call < CALLS; call = next++) {
        const events = Array.from({ length: EVENTS }, (_, i) => {
          const player = `p${(call * 3 + i) % 50}`;
          const { day, timestamp } = times[(call + i) % 2];
          const name = ["match", "buy"][i % 2];
          raw[call % 4].push({ name, player, day });
          return { name, partner_user_id: player, timestamp, event_id: `${call}-${i}` };
        });
        let res;
        do res = await svc.postJson("/v1/events", { events }, healthy[call % 4].publicKey);
        while (res.status === 503);
        if (res.status !== 200) refused.push({ status: res.status, body: res.body });
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, send));
    expect(refused).toEqual([]);

    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
      120_000,
    );
    for (const [i, project] of healthy.entries()) {
      const trends = await svc.postOk("/v1/events/trends", { from: days[0], to: days[1] }, project.privateKey);
      expect(byName(trends)).toEqual(bruteForce(raw[i], days));
    }

    // The poison project's segment set aside with its error, named by /readyz and counted by /metrics.
    const ready = await waitFor(
      async () => (await (await fetch(`${svc.baseUrl}/readyz`)).json()) as { events?: { parked_segments?: any[] } },
      (body) => (body.events?.parked_segments ?? []).length > 0,
    );
    expect(ready.events!.parked_segments).toEqual([
      { project_id: poison.projectId, seq: 1, error: expect.stringMatching(/\S/) },
    ]);
    expect(await parkedMetric()).toBe(1);
  });
});
