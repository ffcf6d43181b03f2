import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OwnerMemory } from "../../db/owner-memory.js";
import type { DocumentChange } from "../apply/absorb.js";
import { nameField } from "../rollup-keys.js";
import type { PlayerDirectory } from "../player-directory.js";
import type { AsOfNow, PlayerAsOfNow } from "../reads/as-of-now.js";
import type { CohortFilter } from "../reads/query.js";
import { HistoryMemory } from "../rollups/history-memory.js";
import type { DayCounts } from "../rollups/player-rollup.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import { activePoints } from "./active-players.js";
import { bucketCounts } from "./bucket-counts.js";
import { retentionTables } from "./cohort-retention.js";
import { dayNumber, dayOfNumber, weekOf } from "./periods.js";
import { PlayerActivity } from "./player-activity.js";

/**
 * The KPIs' packed columns, groups of cohorts and arithmetic against a brute force over plain histories: random
 * players, tags and days, then the memory's histories changed under the same PlayerActivity (late events, a
 * device folded into a player, an erasure, the idle swept) and the members retagged, read again after each.
 */
const PROJECT = "p1";
const TAGS = ["a", "b", "c", "d"];
const NAMES = ["play", "buy", "quit"];
// Today from the clock: the weeks the ranges cross move with it.
const TODAY = dayNumber(new Date().toISOString().slice(0, 10));
const FIRST_DAY = TODAY - 40;
const FROM = TODAY - 30;
const day = (offset: number) => dayOfNumber(FROM + offset);

/** A world: each player's history (day → name field → events) and tags, as the brute force reads them. */
interface World {
  histories: Map<string, DayCounts>;
  tags: Map<string, string[]>;
}

const filters: CohortFilter[] = TAGS.map((tag) => ({ tags: [tag], tagsMatch: "any", traits: [], tagsNone: [] }));

/** A player's days with an event (of `names`), ascending, inside the retention window. */
const activeDays = (days: DayCounts, names?: string[]) =>
  Object.keys(days)
    .filter(
      (d) =>
        dayNumber(d) >= FIRST_DAY &&
        Object.entries(days[d]).some(([f, n]) => n > 0 && (!names || names.map(nameField).includes(f))),
    )
    .map(dayNumber)
    .sort((x, y) => x - y);

function bruteRetention(world: World, tag: string, how: { returnName?: string; unbounded?: boolean; week?: boolean }) {
  const period = (d: number) => (how.week ? weekOf(d) : d);
  const [from, to, today] = [FROM, TODAY - 1, TODAY].map(period);
  const table = Array.from({ length: to - from + 1 }, (_, i) => ({
    players: 0,
    returned: new Array(Math.min(30, today - from - i) + 1).fill(0),
  }));
  for (const [key, days] of world.histories) {
    if (!world.tags.get(key)?.includes(tag)) continue;
    const first = activeDays(days)[0];
    if (first === undefined || period(first) < from || period(first) > to) continue;
    const start = period(first);
    const row = table[start - from];
    row.players++;
    const returns = activeDays(days, how.returnName ? [how.returnName] : undefined).map((d) => period(d) - start);
    const last = Math.max(-1, ...returns);
    row.returned.forEach((_, k) => {
      if (how.unbounded ? k <= last : returns.includes(k)) row.returned[k]++;
    });
  }
  return table;
}

function bruteActive(world: World, tag: string, names?: string[]) {
  return Array.from({ length: 30 }, (_, i) => {
    const on = FROM + i;
    let [dau, wau, mau, newPlayers] = [0, 0, 0, 0];
    for (const [key, days] of world.histories) {
      if (!world.tags.get(key)?.includes(tag)) continue;
      const active = activeDays(days, names);
      if (active.includes(on)) dau++;
      if (active.some((d) => d <= on && d > on - 7)) wau++;
      if (active.some((d) => d <= on && d > on - 30)) mau++;
      if (active[0] === on) newPlayers++;
    }
    return { date: dayOfNumber(on), dau, wau, mau, newPlayers };
  });
}

/** Per tag, week bucket date and field: distinct players and events. */
function bruteWeeks(world: World, tag: string, dateOf: ReadonlyMap<string, string>) {
  const cells: Record<string, Record<string, { e: number; p: number }>> = {};
  for (const [key, days] of world.histories) {
    if (!world.tags.get(key)?.includes(tag)) continue;
    const mine = new Map<string, number>();
    for (const [d, names] of Object.entries(days)) {
      const date = dateOf.get(d);
      if (!date || dayNumber(d) < FIRST_DAY) continue;
      for (const [field, n] of Object.entries(names))
        if (n > 0) mine.set(`${date}|${field}`, (mine.get(`${date}|${field}`) ?? 0) + n);
    }
    for (const [cell, n] of mine) {
      const [date, field] = cell.split("|");
      const slot = ((cells[date] ??= {})[field] ??= { e: 0, p: 0 });
      slot.e += n;
      slot.p++;
    }
  }
  return cells;
}

/** The read model over `memory` and the world's members, with the players `changed` read as of now. */
function reader(memory: HistoryMemory, world: World, changed: () => PlayerAsOfNow[]) {
  // A member list is the same array until its tag's members change, as the directory's buckets are.
  const lists = new Map<string, { of: string; keys: string[] }>();
  const membersOf = (tag: string) => {
    const keys = [...world.tags].filter(([, tags]) => tags.includes(tag)).map(([key]) => key);
    const known = lists.get(tag);
    if (known?.of === keys.join()) return known.keys;
    lists.set(tag, { of: keys.join(), keys });
    return keys;
  };
  const asOfNow = {
    read: async <Base>(
      _: string,
      fs: readonly CohortFilter[],
      read: (f: CohortFilter, e: Set<string>) => Promise<Base>,
    ) => ({
      bases: await Promise.all(fs.map((filter) => read(filter, new Set(changed().map((c) => c.target))))),
      changed: changed(),
    }),
  } as unknown as AsOfNow;
  const directory = {
    members: async (_: string, filter: CohortFilter) => [membersOf(filter.tags[0])],
  } as unknown as PlayerDirectory;
  const playerRollups = {
    slotted: async (projectId: string, keys: readonly (readonly string[])[] | null) => memory.slotted(projectId, keys)!,
  } as unknown as PlayerRollupStore;
  return new PlayerActivity({ asOfNow, directory, playerRollups });
}

const change = (key: string, inc: Record<string, number>, rest: Partial<DocumentChange> = {}): DocumentChange => ({
  id: `${PROJECT}/${key}`,
  inc,
  init: { project_id: PROJECT, identity_key: key },
  ...rest,
});

const worldArbitrary = fc.record({
  players: fc.array(
    fc.record({
      tags: fc.subarray(TAGS),
      events: fc.array(fc.record({ day: fc.integer({ min: -12, max: 29 }), name: fc.constantFrom(...NAMES) }), {
        maxLength: 12,
      }),
    }),
    { minLength: 1, maxLength: 25 },
  ),
  late: fc.array(
    fc.record({ player: fc.nat(), day: fc.integer({ min: -5, max: 29 }), name: fc.constantFrom(...NAMES) }),
    { maxLength: 6 },
  ),
  fold: fc.record({ device: fc.nat(), into: fc.nat() }),
  erased: fc.nat(),
  retag: fc.record({ player: fc.nat(), tags: fc.subarray(TAGS) }),
});

describe("the KPIs' packed columns and groups of cohorts", () => {
  it("count as the brute force over the histories, before and after late events, a fold, a retag and an erasure", async () => {
    await fc.assert(
      fc.asyncProperty(worldArbitrary, async (input) => {
        const keys = input.players.map((_, i) => `u:p${i}`);
        const world: World = { histories: new Map(), tags: new Map() };
        let changed: PlayerAsOfNow[] = [];
        const memory = new HistoryMemory(new OwnerMemory(100_000_000));
        const found = input.players.map(({ tags, events }, i) => {
          const days: DayCounts = {};
          for (const { day: offset, name } of events) {
            const field = nameField(name);
            (days[day(offset)] ??= {})[field] = (days[day(offset)]?.[field] ?? 0) + 1;
          }
          world.histories.set(keys[i], days);
          world.tags.set(keys[i], tags);
          const rollup = { identityKey: keys[i], days, sums: {}, cohorts: [], foldedInto: null, hw: 1 };
          return { id: `${PROJECT}/${keys[i]}`, rollup, hw: 1 };
        });
        await memory.fill(PROJECT, async () => found);
        const activity = reader(memory, world, () => changed);
        const check = async () => {
          const model = await activity.of(PROJECT, filters);
          const tables = (how: { returnName?: string; unbounded?: boolean; week?: boolean }) =>
            retentionTables(model, {
              from: FROM,
              to: TODAY - 1,
              interval: how.week ? "week" : "day",
              periods: 30,
              mode: how.unbounded ? "unbounded" : "n_day",
              returnName: how.returnName,
              today: TODAY,
              firstDay: FIRST_DAY,
            }).map((cohorts) => cohorts.map(({ players, returned }) => ({ players, returned })));
          const kinds = [
            {},
            { returnName: "buy" },
            { unbounded: true },
            { week: true },
            { week: true, unbounded: true },
          ];
          const retention = kinds.map(tables);
          const active = activePoints(model, { from: FROM, to: TODAY - 1, firstDay: FIRST_DAY });
          const playing = activePoints(model, { from: FROM, to: TODAY - 1, names: ["play"], firstDay: FIRST_DAY });
          const range = Array.from({ length: 30 }, (_, i) => day(i));
          const weeks = bucketCounts(model, range, "week", dayOfNumber(FIRST_DAY));
          TAGS.forEach((tag, t) => {
            kinds.forEach((how, i) => expect(retention[i][t]).toEqual(bruteRetention(world, tag, how)));
            expect(active[t]).toEqual(bruteActive(world, tag));
            expect(playing[t]).toEqual(bruteActive(world, tag, ["play"]));
            expect(weeks.counts[t]).toEqual(bruteWeeks(world, tag, weeks.dateOf));
          });
        };
        await check();

        // Late events, some before the range (a new first day), as the worker applies them.
        let seq = 2;
        for (const { player, day: offset, name } of input.late) {
          const key = keys[player % keys.length];
          const field = nameField(name);
          memory.absorbed(seq++, [change(key, { [`days.${day(offset)}.${field}`]: 1 })]);
          const days = world.histories.get(key)!;
          (days[day(offset)] ??= {})[field] = (days[day(offset)]?.[field] ?? 0) + 1;
        }
        await check();

        // A device folded into a player: its days move, its own history is emptied.
        const [device, into] = [keys[input.fold.device % keys.length], keys[input.fold.into % keys.length]];
        if (device !== into) {
          const moved = world.histories.get(device)!;
          const inc: Record<string, number> = {};
          for (const [d, names] of Object.entries(moved))
            for (const [f, n] of Object.entries(names)) inc[`days.${d}.${f}`] = n;
          memory.absorbed(seq++, [
            change(device, {}, { unset: ["days", "sums"], set: { folded_into: into } }),
            change(into, inc),
          ]);
          const target = world.histories.get(into)!;
          for (const [d, names] of Object.entries(moved))
            for (const [f, n] of Object.entries(names)) (target[d] ??= {})[f] = (target[d]?.[f] ?? 0) + n;
          world.histories.set(device, {});
        }
        await check();

        // A retag acknowledged and not yet moved: that player is read as of now (its history, its tags now).
        const retagged = keys[input.retag.player % keys.length];
        world.tags.set(retagged, input.retag.tags);
        changed = [
          {
            target: retagged,
            histories: [
              {
                identityKey: retagged,
                days: world.histories.get(retagged)!,
                sums: {},
                cohorts: [],
                foldedInto: null,
                hw: seq,
              },
            ],
            now: { tags: input.retag.tags, traits: new Map() },
            erased: false,
          },
        ];
        await check();
        changed = [];
        await check();

        // An erasure: the history deleted, the player in no cohort.
        const erased = keys[input.erased % keys.length];
        memory.deleted([`${PROJECT}/${erased}`]);
        world.histories.delete(erased);
        await check();
      }),
      { numRuns: 60 },
    );
  });
});
