import type { DocumentChange } from "./absorb.js";
import { cohortMonthId, countsChange, EVERYONE, nameBlockOf } from "../rollups/cohort-rollup-store.js";
import { dayOf, monthOf, nameField, nameOfField } from "../rollup-keys.js";
import type { QueuedEvent } from "../queue/entries.js";
import type { ProjectNames } from "../rollups/event-name-store.js";
import { type DayCounts, type PlayerRollup, playerRollupId } from "../rollups/player-rollup.js";
import { addSum, millionthsOf, type SumDays } from "../reads/sums.js";
import type { SummedProperty } from "../rollups/summed-property-store.js";

/** What one segment changes: exactly what the worker writes, recorded before any of it is written. */
export interface Plan {
  players: DocumentChange[];
  cohorts: DocumentChange[];
  /** A trait key turned on: resyncs of its holders to queue, after which its cohorts are whole. */
  backfill?: { key: string; holders: string[] };
  /** A step of a sum's back-fill: once written, the next is queued or the sum marked ready. */
  sumBackfill?: SumBackfillStep;
}

/** A step of a sum's back-fill (sum-backfill.ts), carried by its plan. */
export interface SumBackfillStep {
  id: string;
  /** The step counted the raw events of the segments after this one... */
  after: number;
  /** ...through this one. */
  through: number;
  /** No raw event before the sum's segment is left: the sum is ready once this step is written. */
  done: boolean;
}

/** The reads a plan is decided from. */
export interface PlanReads {
  projectId: string;
  /** Days before this are out of the retention window: dropped from histories, never moved. */
  firstDay: string;
  /** The stored history of every player the segment touches (absent: none yet). */
  rollups: ReadonlyMap<string, PlayerRollup>;
  /** The cohorts of every player the segment touches, as of now. */
  cohortsNow: ReadonlyMap<string, readonly string[]>;
  /** The trait keys of every player the segment touches, as of now (a backfill finds a key's holders by them). */
  traitKeysNow: ReadonlyMap<string, readonly string[]>;
  /** The project's names, every name of the segment and of the histories it touches among them. */
  names: ProjectNames;
  /** The properties summed in this segment, by event name. */
  summed: ReadonlyMap<string, readonly SummedProperty[]>;
}

interface PlayerState {
  days: DayCounts;
  sums: SumDays;
  cohorts: string[];
  traitKeys: readonly string[];
  inc: Record<string, number>;
  unset: Set<string>;
  foldedInto: string | null;
  touched: boolean;
}

/**
 * Decides a segment's rollup changes from the state before it. Pure: given
 * the same reads it gives the same plan. Cohort series count a player's whole
 * history in the cohorts the player belongs to now, so a change of cohorts
 * moves every day of it; `p` (distinct players) moves by one for each day
 * and name the player has events on.
 */
export class Planner {
  private readonly players = new Map<string, PlayerState>();
  /** Per cohort, month and block of names, per counts path: the events and players it moves by. */
  private readonly cohortIncs = new Map<
    string,
    {
      cohort: string;
      month: string;
      block: number;
      moves: Map<string, { e: number; p: number }>;
      /** Per sums path, the millionths it moves by. */
      sums: Map<string, number>;
    }
  >();

  constructor(private readonly reads: PlanReads) {}

  /** Adds the events to `identityKey`'s history and to every cohort it is in now. */
  addEvents(identityKey: string, events: readonly QueuedEvent[]): void {
    const player = this.resynced(identityKey);
    for (const event of events) {
      const day = dayOf(event.t);
      // Out of the retention window by now (the queue lagged): counting it would only be swept again.
      if (day < this.reads.firstDay) continue;
      const field = nameField(event.n);
      const before = player.days[day]?.[field] ?? 0;
      (player.days[day] ??= {})[field] = before + 1;
      bump(player.inc, `days.${day}.${field}`, 1);
      for (const cohort of [EVERYONE, ...player.cohorts]) this.count(cohort, day, field, 1, before === 0 ? 1 : 0);
      for (const { id, property } of this.reads.summed.get(event.n) ?? []) {
        const millionths = millionthsOf(event.p, property);
        if (millionths === 0) continue;
        addSum(player.sums, day, field, id, millionths);
        bump(player.inc, sumPath(day, field, id), millionths);
        for (const cohort of [EVERYONE, ...player.cohorts]) this.countSum(cohort, day, field, id, millionths);
      }
    }
  }

  /** Moves the player's history to the cohorts it is in now. */
  resync(identityKey: string): void {
    if (this.reads.rollups.has(identityKey) || this.players.has(identityKey)) this.resynced(identityKey);
  }

  /** Moves a device's whole history into the player `into`. */
  fold(deviceKey: string, into: string): void {
    if (!this.reads.rollups.has(deviceKey) && !this.players.has(deviceKey)) return;
    const device = this.state(deviceKey);
    if (device.foldedInto !== null || deviceKey === into) return;
    const player = this.resynced(into);
    for (const [day, names] of Object.entries(device.days)) {
      for (const [field, events] of Object.entries(names)) {
        if (events === 0) continue;
        const had = player.days[day]?.[field] ?? 0;
        (player.days[day] ??= {})[field] = had + events;
        bump(player.inc, `days.${day}.${field}`, events);
        // Everyone: the events were counted already; two players become one where both had some.
        if (had > 0) this.count(EVERYONE, day, field, 0, -1);
        for (const cohort of device.cohorts) this.count(cohort, day, field, -events, -1);
        for (const cohort of player.cohorts) this.count(cohort, day, field, events, had > 0 ? 0 : 1);
      }
    }
    forEachSum(device.sums, (day, field, id, millionths) => {
      addSum(player.sums, day, field, id, millionths);
      bump(player.inc, sumPath(day, field, id), millionths);
      for (const cohort of device.cohorts) this.countSum(cohort, day, field, id, -millionths);
      for (const cohort of player.cohorts) this.countSum(cohort, day, field, id, millionths);
    });
    device.days = {};
    device.sums = {};
    device.cohorts = [];
    device.traitKeys = [];
    device.foldedInto = into;
    device.touched = true;
    device.inc = {};
    device.unset = new Set(["days", "sums"]);
  }

  /**
   * Takes the player's whole history out of every count it is in (an erasure): events after this segment start a new
   * history under the same key.
   */
  erase(identityKey: string): void {
    if (!this.reads.rollups.has(identityKey) && !this.players.has(identityKey)) return;
    const player = this.state(identityKey);
    const cohorts = [EVERYONE, ...player.cohorts];
    for (const [day, names] of Object.entries(player.days)) {
      for (const [field, events] of Object.entries(names)) {
        if (events > 0) for (const cohort of cohorts) this.count(cohort, day, field, -events, -1);
      }
    }
    forEachSum(player.sums, (day, field, id, millionths) => {
      for (const cohort of cohorts) this.countSum(cohort, day, field, id, -millionths);
    });
    Object.assign(player, { days: {}, sums: {}, cohorts: [], traitKeys: [], foldedInto: null, touched: true });
    player.inc = {};
    player.unset = new Set(["days", "sums"]);
  }

  /** A back-filled sum (sum-backfill.ts): into the history as it is, and the cohorts it is counted in. */
  addBackfilledSum(identityKey: string, day: string, field: string, id: string, millionths: number): void {
    const player = this.state(identityKey);
    addSum(player.sums, day, field, id, millionths);
    bump(player.inc, sumPath(day, field, id), millionths);
    for (const cohort of [EVERYONE, ...player.cohorts]) this.countSum(cohort, day, field, id, millionths);
  }

  plan(): Plan {
    const { projectId } = this.reads;
    const players: DocumentChange[] = [];
    for (const [identityKey, player] of this.players) {
      if (!player.touched && Object.keys(player.inc).length === 0 && player.unset.size === 0) continue;
      const days = Object.keys(player.days).sort();
      players.push({
        id: playerRollupId(projectId, identityKey),
        inc: player.inc,
        // Only a player resynced or folded has its cohorts and trait keys decided here; a back-filled sum has not.
        ...(player.touched && {
          set: {
            cohorts: player.cohorts,
            trait_keys: player.traitKeys,
            folded_into: player.foldedInto,
            last_day: days.at(-1) ?? "",
          },
        }),
        unset: [...player.unset],
        init: { project_id: projectId, identity_key: identityKey },
      });
    }
    const cohorts = [...this.cohortIncs.values()].map(({ cohort, month, block, moves, sums }) => ({
      id: cohortMonthId(projectId, cohort, month, block),
      inc: Object.fromEntries([
        ...[...moves].map(([path, { e, p }]) => [path, countsChange(e, p)]),
        ...[...sums].filter(([, by]) => by !== 0),
      ]),
      init: { project_id: projectId, cohort, month },
    }));
    return { players, cohorts };
  }

  private state(identityKey: string): PlayerState {
    let player = this.players.get(identityKey);
    if (!player) {
      const stored = this.reads.rollups.get(identityKey);
      const days: DayCounts = {};
      const sums: SumDays = {};
      const unset = new Set<string>();
      for (const [day, names] of Object.entries(stored?.days ?? {})) {
        if (day < this.reads.firstDay) unset.add(`days.${day}`);
        else days[day] = { ...names };
      }
      for (const [day, fields] of Object.entries(stored?.sums ?? {})) {
        if (day < this.reads.firstDay) unset.add(`sums.${day}`);
        else sums[day] = structuredClone(fields);
      }
      player = {
        days,
        sums,
        cohorts: [...(stored?.cohorts ?? [])],
        traitKeys: [],
        inc: {},
        unset,
        foldedInto: stored?.foldedInto ?? null,
        touched: false,
      };
      this.players.set(identityKey, player);
    }
    return player;
  }

  /** The player's state with its history moved to the cohorts it is in now. */
  private resynced(identityKey: string): PlayerState {
    const player = this.state(identityKey);
    player.touched = true;
    const now = [...(this.reads.cohortsNow.get(identityKey) ?? [])].sort();
    const joined = now.filter((cohort) => !player.cohorts.includes(cohort));
    const left = player.cohorts.filter((cohort) => !now.includes(cohort));
    for (const [day, names] of Object.entries(player.days)) {
      for (const [field, events] of Object.entries(names)) {
        if (events === 0) continue;
        for (const cohort of joined) this.count(cohort, day, field, events, 1);
        for (const cohort of left) this.count(cohort, day, field, -events, -1);
      }
    }
    forEachSum(player.sums, (day, field, id, millionths) => {
      for (const cohort of joined) this.countSum(cohort, day, field, id, millionths);
      for (const cohort of left) this.countSum(cohort, day, field, id, -millionths);
    });
    player.cohorts = now;
    player.traitKeys = [...(this.reads.traitKeysNow.get(identityKey) ?? [])].sort();
    return player;
  }

  private count(cohort: string, day: string, field: string, events: number, players: number): void {
    if (events === 0 && players === 0) return;
    const doc = this.cohortDoc(cohort, day, field);
    const path = `counts.${day}.${field}`;
    const move = doc.moves.get(path) ?? { e: 0, p: 0 };
    doc.moves.set(path, { e: move.e + events, p: move.p + players });
  }

  private countSum(cohort: string, day: string, field: string, id: string, millionths: number): void {
    const doc = this.cohortDoc(cohort, day, field);
    const path = sumPath(day, field, id);
    doc.sums.set(path, (doc.sums.get(path) ?? 0) + millionths);
  }

  /** The changes of the cohort document that holds `field`'s counts on `day`. */
  private cohortDoc(cohort: string, day: string, field: string) {
    const month = monthOf(day);
    const block = nameBlockOf(this.reads.names, nameOfField(field));
    const key = `${cohort}\u0000${month}\u0000${block}`;
    let doc = this.cohortIncs.get(key);
    if (!doc) this.cohortIncs.set(key, (doc = { cohort, month, block, moves: new Map(), sums: new Map() }));
    return doc;
  }
}

/** Where a sum is kept, in a history and in a cohort document alike. */
export const sumPath = (day: string, field: string, id: string): string => `sums.${day}.${field}.${id}`;

function forEachSum(sums: SumDays, visit: (day: string, field: string, id: string, millionths: number) => void) {
  for (const [day, fields] of Object.entries(sums)) {
    for (const [field, ofField] of Object.entries(fields)) {
      for (const [id, millionths] of Object.entries(ofField)) if (millionths !== 0) visit(day, field, id, millionths);
    }
  }
}

function bump(inc: Record<string, number>, path: string, by: number): void {
  inc[path] = (inc[path] ?? 0) + by;
}
