import { bruteForce } from "../service/events.js";

type TraitValue = string | number | boolean;

/** A trends read's `sum`: the property, and the names that have it summed. */
export interface ModelSum {
  property: string;
  names: readonly string[];
}

type Properties = Record<string, string | number | boolean>;

/** A filter as the read endpoints take it. */
export interface ModelFilter {
  tags?: string[];
  tags_match?: "any" | "all";
  tags_none?: string[];
  traits?: Record<string, TraitValue>;
}

/**
 * What a project's players and applied events are, kept by a test beside the
 * service: the brute-force answer of every chart, as of now.
 */
export class CohortModel {
  private readonly tags = new Map<string, Set<string>>();
  private readonly traits = new Map<string, Map<string, TraitValue>>();
  /** Device id to the partner id it is linked to. */
  private readonly owners = new Map<string, string>();
  private readonly events: {
    name: string;
    who: { partner?: string; device?: string };
    day: string;
    properties?: Properties;
  }[] = [];

  /** Answers whether the player's tags changed. */
  tag(partner: string, tag: string, on: boolean): boolean {
    const tags = this.tags.get(partner) ?? new Set();
    const changed = tags.has(tag) !== on;
    if (on) tags.add(tag);
    else tags.delete(tag);
    // An update that changes nothing creates no profile.
    if (changed || this.tags.has(partner)) this.tags.set(partner, tags);
    return changed;
  }

  /** Answers whether the player's traits changed. */
  trait(partner: string, key: string, value: TraitValue | null): boolean {
    const traits = this.traits.get(partner) ?? new Map();
    const changed = traits.get(key) !== (value ?? undefined);
    if (value === null) traits.delete(key);
    else traits.set(key, value);
    if (changed || this.traits.has(partner)) this.traits.set(partner, traits);
    return changed;
  }

  link(device: string, partner: string): void {
    this.owners.set(device, partner);
  }

  /** An erasure of the partner: their tags, traits and links go, and every event that counts for them now. */
  erase(partner: string): void {
    const player = `u:${partner}`;
    this.events.splice(0, this.events.length, ...this.events.filter((e) => this.playerOf(e.who) !== player));
    this.tags.delete(partner);
    this.traits.delete(partner);
    for (const [device, owner] of this.owners) if (owner === partner) this.owners.delete(device);
  }

  event(name: string, who: { partner?: string; device?: string }, day: string, properties?: Properties): void {
    this.events.push({ name, who, day, properties });
  }

  /** Whom an event counts for now: its partner, its device's partner, else the device itself. */
  private playerOf(who: { partner?: string; device?: string }): string {
    if (who.partner !== undefined) return `u:${who.partner}`;
    const owner = this.owners.get(who.device!);
    return owner !== undefined ? `u:${owner}` : `d:${who.device}`;
  }

  private matches(player: string, filter: ModelFilter): boolean {
    const partner = player.startsWith("u:") ? player.slice(2) : null;
    const tags = (partner !== null && this.tags.get(partner)) || new Set<string>();
    const traits = (partner !== null && this.traits.get(partner)) || new Map<string, TraitValue>();
    const wanted = filter.tags ?? [];
    const tagged =
      wanted.length === 0 ||
      (filter.tags_match === "all" ? wanted.every((t) => tags.has(t)) : wanted.some((t) => tags.has(t)));
    const excluded = (filter.tags_none ?? []).some((t) => tags.has(t));
    return (
      tagged && !excluded && Object.entries(filter.traits ?? {}).every(([key, value]) => traits.get(key) === value)
    );
  }

  /** The events of the players in `filter` now, each under the player it counts for now. */
  counted(filter: ModelFilter): { name: string; player: string; day: string; properties?: Properties }[] {
    return this.events
      .map((e) => ({ name: e.name, player: this.playerOf(e.who), day: e.day, properties: e.properties }))
      .filter((e) => this.matches(e.player, filter));
  }

  /**
   * The trends answer for `filter` (as byName() shapes it); with `sum`, the summed names' points carry the
   * property's total: numbers alone, each to the millionth, added as integers.
   */
  trends(filter: ModelFilter, days: readonly string[], sum?: ModelSum): Map<string, unknown> {
    const counted = this.counted(filter);
    const series = bruteForce(counted, days);
    if (!sum) return series;
    for (const [name, points] of series) {
      if (!sum.names.includes(name)) continue;
      for (const point of points) {
        let millionths = 0;
        for (const e of counted) {
          const value = e.properties?.[sum.property];
          if (e.name === name && e.day === point.date && typeof value === "number")
            millionths += Math.round(value * 1e6);
        }
        point.sum = millionths / 1e6;
      }
    }
    return series;
  }

  /** The split_by tags answer: a series per tag some player carries now, per name. */
  split(filter: ModelFilter, days: readonly string[], sum?: ModelSum): Map<string, unknown> {
    const tags = new Set([...this.tags.values()].flatMap((set) => [...set]));
    const series = new Map<string, unknown>();
    for (const tag of [...tags].sort()) {
      for (const [name, points] of this.trends({ ...filter, tags: [tag], tags_match: "any" }, days, sum)) {
        series.set(`${tag}/${name}`, points);
      }
    }
    return series;
  }

  /** The names answer: events per name, most first. */
  names(filter: ModelFilter, days: readonly string[]): { name: string; events: number }[] {
    const totals = new Map<string, number>();
    for (const e of this.counted(filter)) if (days.includes(e.day)) totals.set(e.name, (totals.get(e.name) ?? 0) + 1);
    return [...totals]
      .map(([name, events]) => ({ name, events }))
      .sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : 1));
  }

  /** The identity keys players/search finds for `filter`, in its order. */
  search(filter: ModelFilter): string[] {
    const players = new Set([...this.tags.keys(), ...this.traits.keys()].map((p) => `u:${p}`));
    return [...players].filter((p) => this.matches(p, filter)).sort();
  }
}

/** A map's entries sorted by key, for comparing answers whose order is not the point. */
export const sorted = (map: Map<string, unknown>) => [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
