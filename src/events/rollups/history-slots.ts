import { dayNumber } from "../kpis/periods.js";

/** Per day, events per name field (as player-rollup-store.ts keeps them). */
type DayCounts = Readonly<Record<string, Readonly<Record<string, number>>>>;

/** Per project, each (day, name field) pair seen, numbered in order of first sight, with its day as a dayNumber(). */
export class SlotNumbers {
  private readonly numbers = new Map<string, number>();
  readonly pairs: { day: string; field: string }[] = [];
  readonly dayNumbers: number[] = [];

  of(day: string, field: string): number {
    const key = `${day}\u0000${field}`;
    let number = this.numbers.get(key);
    if (number === undefined) {
      number = this.pairs.length;
      this.numbers.set(key, number);
      this.pairs.push({ day, field });
      this.dayNumbers.push(dayNumber(day));
    }
    return number;
  }
}

/**
 * A history as slot numbers of its project's (day, name field) pairs and the events of each, and the days it has
 * an event on (dayNumber()s, ascending, each once): what the KPIs read of a player without a name filter.
 */
export interface HistorySlots {
  slots: Int32Array;
  counts: Int32Array;
  days: Int32Array;
  /** Its player's number among the histories read with it (below their `ordinals`): a read's index into arrays. */
  ordinal: number;
}

/** Histories by identity key, as slots of `numbers`. */
export interface SlottedHistories {
  numbers: SlotNumbers;
  players: ReadonlyMap<string, HistorySlots>;
  /** Every history's `ordinal` is below it. */
  ordinals: number;
  /**
   * The histories by ordinal, when the numbers are the owner's memory's: one key's across reads while its history
   * is remembered, and a history new to memory takes a number above every earlier one (`ordinals` grows).
   */
  byOrdinal?: readonly (HistorySlots | undefined)[];
}

/** Histories found in memory, and the keys it does not know. */
export interface SlottedRead extends SlottedHistories {
  missing: string[];
}

/** A history's (day, name field) pairs as slots of `numbers` (which it extends), with their events and its days. */
export function slotsOf(history: DayCounts, numbers: SlotNumbers, ordinal: number): HistorySlots {
  const slots: number[] = [];
  const counts: number[] = [];
  const days: number[] = [];
  for (const [day, names] of Object.entries(history)) {
    const before = slots.length;
    for (const [field, events] of Object.entries(names)) {
      if (events <= 0) continue;
      slots.push(numbers.of(day, field));
      counts.push(events);
    }
    if (slots.length > before) days.push(numbers.dayNumbers[slots[before]]);
  }
  return {
    slots: Int32Array.from(slots),
    counts: Int32Array.from(counts),
    days: Int32Array.from(days).sort(),
    ordinal,
  };
}
