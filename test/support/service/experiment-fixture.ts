import { queueOf, waitFor } from "./events.js";
import type { TestService } from "./service.js";
import { seededRandom } from "../models/config-model.js";

const DAY_MS = 86_400_000;

/** An exposed player as the service recorded them: their variant and the UTC day of their exposure. */
export interface ExposedPlayer {
  partner: string;
  variant: string;
  day: string;
}

/** A generated event: its player, name, day, and the `gold` it carries (buy events). */
export interface FixtureEvent {
  partner: string;
  name: "play" | "buy";
  day: string;
  gold?: number;
}

export interface ExperimentFixture {
  projectId: string;
  privateKey: string;
  exposed: ExposedPlayer[];
  events: FixtureEvent[];
  /** Players never exposed, with events too. */
  others: string[];
}

const dayOf = (time: number) => new Date(time).toISOString().slice(0, 10);

/**
 * A project with a running experiment `exp` (variants a, b, c; control a), its players exposed by config/evaluate
 * with the service's clock set `daysAgo` days back for each group (so each exposure day lies in the past), then
 * events of every player (exposed or not) on the last 12 days, `buy` summing `gold`, all applied.
 */
export async function experimentFixture(
  svc: TestService,
  {
    groups,
    seed,
    weights = [1, 1, 1],
  }: { groups: { daysAgo: number; players: number }[]; seed: number; weights?: number[] },
): Promise<ExperimentFixture> {
  const random = seededRandom(seed);
  const { projectId, privateKey } = await svc.createProject("Experiment results");
  const variants = ["a", "b", "c"].map((name, i) => ({ name, weight: weights[i] }));
  const exposed: ExposedPlayer[] = [];
  const oldest = Math.max(...groups.map((group) => group.daysAgo));
  svc.clock.advance(-oldest * DAY_MS);
  await svc.postOk("/v1/experiments/update", { name: "exp", variants, state: "running" }, privateKey);
  svc.clock.advance(oldest * DAY_MS);
  let next = 0;
  for (const { daysAgo, players } of groups) {
    svc.clock.advance(-daysAgo * DAY_MS);
    try {
      for (let i = 0; i < players; i++) {
        const partner = `p${next++}`;
        const answer = await svc.postOk("/v1/config/evaluate", { partner_user_id: partner }, privateKey);
        exposed.push({ partner, variant: answer.experiments.exp, day: dayOf(svc.clock.now().getTime()) });
      }
    } finally {
      svc.clock.advance(daysAgo * DAY_MS);
    }
  }
  const others = Array.from({ length: 10 }, (_, i) => `other${i}`);
  const events: FixtureEvent[] = [];
  const last = svc.clock.now().getTime() - 60_000;
  const sent: object[] = [];
  for (const partner of [...exposed.map((player) => player.partner), ...others]) {
    for (let ago = 11; ago >= 0; ago--) {
      if (random() < 0.55) continue;
      const timestamp = new Date(last - ago * DAY_MS).toISOString();
      const buy = random() < 0.4;
      const gold = buy ? Math.round(random() * 1000) / 4 - 20 : undefined;
      events.push({ partner, name: buy ? "buy" : "play", day: timestamp.slice(0, 10), ...(buy && { gold }) });
      sent.push({
        name: buy ? "buy" : "play",
        partner_user_id: partner,
        timestamp,
        ...(buy && { properties: { gold } }),
      });
    }
  }
  await svc.postOk("/v1/events/properties/update", { name: "buy", property: "gold", sum: true }, privateKey);
  for (let i = 0; i < sent.length; i += 500) {
    await svc.postOk("/v1/events", { events: sent.slice(i, i + 500) }, privateKey);
  }
  await waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
  );
  return { projectId, privateKey, exposed, events, others };
}

export interface ModelMetric {
  kind: "return" | "event" | "sum";
  days: number;
  name?: string;
}

/** Per variant, by brute force over the events: exposed players, measured ones, Σ values and Σ squares. */
export function modelTotals(fixture: ExperimentFixture, metric: ModelMetric, today: string, variants: string[]) {
  const offsets = metric.kind === "return" ? [metric.days] : Array.from({ length: metric.days }, (_, k) => k);
  const plus = (day: string, k: number) => dayOf(Date.parse(`${day}T00:00:00Z`) + k * DAY_MS);
  return new Map(
    variants.map((variant) => {
      const totals = { exposed: 0, measured: 0, total: 0, squares: 0 };
      for (const player of fixture.exposed.filter((one) => one.variant === variant)) {
        totals.exposed++;
        if (plus(player.day, offsets.at(-1)!) >= today) continue;
        totals.measured++;
        const days = offsets.map((k) => plus(player.day, k));
        const theirs = fixture.events.filter((event) => event.partner === player.partner && days.includes(event.day));
        const value =
          metric.kind === "return"
            ? Number(theirs.length > 0)
            : metric.kind === "event"
              ? Number(theirs.some((event) => event.name === metric.name))
              : theirs.filter((event) => event.name === "buy").reduce((sum, event) => sum + event.gold!, 0);
        totals.total += value;
        totals.squares += value * value;
      }
      return [variant, totals];
    }),
  );
}
