import { performance } from "node:perf_hooks";
import type { Db } from "mongodb";
import { dayOf } from "../../src/events/rollup-keys.js";
import { partnerKey } from "../../src/players/rules/identity-key.js";
import { PLAYER_PROFILES } from "../../src/players/storage/profile-store.js";
import { appliedEvents } from "./events-raw.js";

/**
 * The KPI answers the way a service without sets would: every raw event of the project read (appliedEvents),
 * joined in memory with the profiles' tags as of now, then counted. Each function answers in the service's JSON shape, to be compared with it.
 */
export interface RawEvents {
  /** Per player: the days of their events, per name. */
  days: Map<string, Map<string, Set<string>>>;
  tagsOf: Map<string, string[]>;
  ms: number;
}

export async function readRaw(db: Db, projectId: string, tags: readonly string[]): Promise<RawEvents> {
  const started = performance.now();
  const wanted = new Set(tags);
  const tagsOf = new Map<string, string[]>();
  const profiles = db
    .collection(PLAYER_PROFILES)
    .find({ project_id: projectId }, { projection: { identity_key: 1, tags: 1 } });
  for await (const doc of profiles)
    tagsOf.set(
      doc.identity_key,
      (doc.tags as string[]).filter((tag) => wanted.has(tag)),
    );
  const days = new Map<string, Map<string, Set<string>>>();
  for await (const events of appliedEvents(db, projectId)) {
    for (const event of events) {
      if (event.u === null) continue;
      const player = partnerKey(event.u);
      let names = days.get(player);
      if (!names) days.set(player, (names = new Map()));
      let set = names.get(event.n);
      if (!set) names.set(event.n, (set = new Set()));
      set.add(dayOf(event.t));
    }
  }
  return { days, tagsOf, ms: performance.now() - started };
}

const DAY_MS = 86_400_000;
const number = (day: string) => Date.parse(`${day}T00:00:00Z`) / DAY_MS;
const dayAt = (n: number) => new Date(n * DAY_MS).toISOString().slice(0, 10);
const mondayOf = (day: string) => dayAt(number(day) - ((new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7));

function activeDays(names: Map<string, Set<string>>): number[] {
  return [...new Set([...names.values()].flatMap((set) => [...set]))].map(number).sort((a, b) => a - b);
}

const playersOf = (raw: RawEvents, tag: string) =>
  [...raw.days].filter(([player]) => raw.tagsOf.get(player)?.includes(tag));

/** Retention by day, n_day, split by `tags`. */
export function rawRetention(
  raw: RawEvents,
  tags: readonly string[],
  from: string,
  to: string,
  periods: number,
  today: string,
) {
  return tags.map((tag) => {
    const size = number(to) - number(from) + 1;
    const cohorts = Array.from({ length: size }, (_, i) => ({
      date: dayAt(number(from) + i),
      players: 0,
      returned: new Array<number>(Math.max(0, Math.min(periods, number(today) - number(from) - i) + 1)).fill(0),
    }));
    for (const [, names] of playersOf(raw, tag)) {
      const days = activeDays(names);
      const cohort = cohorts[days[0] - number(from)];
      if (!cohort) continue;
      cohort.players++;
      for (const day of days) if (day - days[0] < cohort.returned.length) cohort.returned[day - days[0]]++;
    }
    return { tag, cohorts };
  });
}

/** Active players split by `tags`. */
export function rawActive(raw: RawEvents, tags: readonly string[], from: string, to: string) {
  return tags.map((tag) => {
    const points = Array.from({ length: number(to) - number(from) + 1 }, (_, i) => ({
      date: dayAt(number(from) + i),
      dau: 0,
      wau: 0,
      mau: 0,
      new_players: 0,
    }));
    for (const [, names] of playersOf(raw, tag)) {
      const days = new Set(activeDays(names));
      const first = Math.min(...days);
      points.forEach((point, i) => {
        const d = number(from) + i;
        const within = (width: number) => [...days].some((day) => day <= d && day > d - width);
        if (days.has(d)) point.dau++;
        if (within(7)) point.wau++;
        if (within(30)) point.mau++;
        if (first === d) point.new_players++;
      });
    }
    return { tag, points };
  });
}

/** Trends by week or month split by `tags`, as "tag/name/date" → {events, players}; events per day are not kept here, so players only. */
export function rawBucketPlayers(
  raw: RawEvents,
  tags: readonly string[],
  from: string,
  to: string,
  interval: "week" | "month",
) {
  const bucket = (day: string) => {
    const start = interval === "week" ? mondayOf(day) : `${day.slice(0, 7)}-01`;
    return start < from ? from : start;
  };
  const counts = new Map<string, number>();
  for (const tag of tags) {
    for (const [, names] of playersOf(raw, tag)) {
      for (const [name, days] of names) {
        const buckets = new Set([...days].filter((day) => day >= from && day <= to).map(bucket));
        for (const date of buckets)
          counts.set(`${tag}/${name}/${date}`, (counts.get(`${tag}/${name}/${date}`) ?? 0) + 1);
      }
    }
  }
  return counts;
}
