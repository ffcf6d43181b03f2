/**
 * The scale bench's game, as pure functions of a seed: who joins when, who plays which day, what they do, which tags
 * and tier they carry. Every figure comes from a hash of (seed, player, day, what), so the generator, the bench and
 * its load process answer the same from the same seed without sharing any state.
 */

export interface ScaleShape {
  players: number;
  /** Events over the whole history: the last day's counts are trimmed or topped up to make it exact. */
  events: number;
  days: number;
  seed: number;
  /** dayNumber() of the history's last day (yesterday): day index `days - 1`. */
  lastDay: number;
}

export const EVENT_NAMES: readonly string[] = [
  ..."session_start level_complete match_end item_craft ad_view quest_complete social_share purchase".split(" "),
];

/** The summed property: `purchase.amount`, prices with 2 decimals. */
export const PURCHASE = EVENT_NAMES.indexOf("purchase");
export const SUMMED = { name: "purchase", property: "amount" } as const;
const PRICES_CENTS = [99, 199, 499, 999, 1999, 4999, 9999];

/** Their sizes run from 1 % to 40 % of the players. */
export const TAGS: readonly string[] = [
  ..."whale beta_tester region_eu region_na region_asia platform_ios platform_android guild_member newsletter creator".split(
    " ",
  ),
];

/** The materialised trait. */
export const TRAIT_KEY = "tier";
const TIERS: readonly [string, number][] = [
  ["bronze", 0.55],
  ["silver", 0.77],
  ["gold", 0.87],
  ["platinum", 0.9],
];

/** Kinds of player: how often they play, how long before they churn, whether they pay. */
const KINDS = [
  { share: 0.02, play: 0.95, lifetime: 400, purchase: 0.35, ads: 0.15, guild: 0.6 },
  { share: 0.28, play: 0.8, lifetime: 120, purchase: 0.04, ads: 0.2, guild: 0.6 },
  { share: 0.7, play: 0.45, lifetime: 25, purchase: 0.004, ads: 0.5, guild: 0.08 },
] as const;
const WHALE = 0;

/** Per name: the chance a playing day has it (a kind's own for ads and purchases) and its mean extra events. */
const PRESENCE = [1, 0.75, 0.55, 0.3, -1, 0.45, 0.06, -1];
const EXTRA = [0.6, 1.2, 2.0, 0.8, 1.0, 0.7, 0, 0];

/** After churning, a player still comes back now and then, and more in the days after the update. */
const COMEBACK = 0.015;
const UPDATE_DAY_FROM_END = 30;
const UPDATE_COMEBACK = 0.08;

const enum Salt {
  Kind = 1,
  Lifetime,
  Play,
  Name,
  Count = 20,
  Price = 40,
  Tag = 60,
  Tier = 80,
  Id,
  Join,
}

function mix(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Player `i`'s partner_user_id: a hash, so that identity key order is not join order, and `i` to keep it unique. */
export const partnerIdOf = (seed: number, i: number): string =>
  `pl_${mix(seed + mix(i + Salt.Id))
    .toString(16)
    .padStart(8, "0")}${i.toString(36)}`;

/** Events of one name on one day: the players (ascending) and each one's events; for purchases each one's cents. */
export interface NameDay {
  players: number[];
  counts: number[];
  cents?: number[];
}

export class ScaleModel {
  /** The first player of each day (players are numbered in the order they joined); joinStart[days] = players. */
  private readonly joinStart: Int32Array;
  private readonly lifetime: Float32Array;
  private readonly kind: Uint8Array;
  /** Extra events a name's count adds per unit of EXTRA (calibrate() sets it to meet `events`). */
  private scale = 1;

  constructor(readonly shape: ScaleShape) {
    const { players, days } = shape;
    // A launch, then a steady trickle with weekend bumps.
    const weights = Array.from({ length: days }, (_, d) => 1 + 4 * Math.exp(-d / 8) + (this.weekend(d) ? 0.3 : 0));
    const total = weights.reduce((a, b) => a + b, 0);
    this.joinStart = new Int32Array(days + 1);
    let sum = 0;
    weights.forEach((w, d) => {
      this.joinStart[d] = Math.round((players * sum) / total);
      sum += w;
    });
    this.joinStart[days] = players;
    this.kind = new Uint8Array(players);
    this.lifetime = new Float32Array(players);
    for (let i = 0; i < players; i++) {
      const u = this.u(i, 0, Salt.Kind);
      const kind = u < KINDS[0].share ? 0 : u < KINDS[0].share + KINDS[1].share ? 1 : 2;
      this.kind[i] = kind;
      this.lifetime[i] = -Math.log(1 - this.u(i, 0, Salt.Lifetime)) * KINDS[kind].lifetime;
    }
  }

  /** A uniform number in [0, 1) of the seed, player, day and what it decides. */
  u(i: number, d: number, salt: number): number {
    return mix(this.shape.seed + mix(i + mix(d * 977 + salt))) / 4294967296;
  }

  weekend(d: number): boolean {
    const weekday = (this.shape.lastDay - this.shape.days + 1 + d + 4) % 7; // 1970-01-01 was a Thursday (4).
    return weekday === 0 || weekday === 6;
  }

  /** Players who joined on or before day `d`. */
  joinedBy(d: number): number {
    return this.joinStart[d + 1];
  }

  joinDay(i: number): number {
    let lo = 0;
    let hi = this.shape.days - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.joinStart[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  kindOf(i: number): number {
    return this.kind[i];
  }

  /** Whether player `i`, who joined on `join`, plays on day `d`: always on the first, less as they age, rarely after churning. */
  plays(i: number, join: number, d: number): boolean {
    const t = d - join;
    if (t <= 0) return t === 0;
    const kind = KINDS[this.kind[i]];
    let p: number;
    if (t < this.lifetime[i])
      p = Math.min(1, kind.play * (0.6 + 0.4 * Math.exp(-t / 6)) * (this.weekend(d) ? 1.15 : 1));
    else
      p =
        COMEBACK +
        (d >= this.shape.days - UPDATE_DAY_FROM_END && d < this.shape.days - UPDATE_DAY_FROM_END + 3
          ? UPDATE_COMEBACK
          : 0);
    return this.u(i, d, Salt.Play) < p;
  }

  private presence(i: number, name: number): number {
    const kind = KINDS[this.kind[i]];
    return name === PURCHASE ? kind.purchase : PRESENCE[name] < 0 ? kind.ads : PRESENCE[name];
  }

  /** Player `i`'s events of `name` on day `d`, when they play that day (0: none of that name). */
  count(i: number, d: number, name: number): number {
    if (this.u(i, d, Salt.Name + name) >= this.presence(i, name)) return 0;
    if (name === PURCHASE) return this.u(i, d, Salt.Count + name) < 0.1 ? 2 : 1;
    const mean = EXTRA[name] * this.scale;
    return mean === 0 ? 1 : 1 + Math.floor(-Math.log(1 - this.u(i, d, Salt.Count + name)) * mean);
  }

  /** The price of purchase `j` of player `i` on day `d`, in cents. */
  priceCents(i: number, d: number, j: number): number {
    const u = this.u(i, d * 8 + j, Salt.Price);
    return PRICES_CENTS[Math.min(PRICES_CENTS.length - 1, Math.floor(-Math.log(1 - u) * 1.6))];
  }

  /**
   * Sets the scale of the events a playing day has so that the history holds `events` in expectation (the last day
   * makes it exact); answers each player's last day of play, for their profile.
   */
  calibrate(): { lastPlayed: Uint8Array; playingDays: number } {
    const { players, days, events } = this.shape;
    const lastPlayed = new Uint8Array(players);
    const byKind = [0, 0, 0];
    for (let join = 0; join < days; join++) {
      for (let i = this.joinStart[join]; i < this.joinStart[join + 1]; i++) {
        for (let d = join; d < days; d++) {
          if (!this.plays(i, join, d)) continue;
          lastPlayed[i] = d;
          byKind[this.kind[i]]++;
        }
      }
    }
    const presence = (name: number) =>
      byKind.reduce((sum, n, k) => {
        const p = name === PURCHASE ? KINDS[k].purchase : PRESENCE[name] < 0 ? KINDS[k].ads : PRESENCE[name];
        return sum + n * p;
      }, 0);
    // E[1 + floor(Exp(mean))] = 1 + 1 / (e^(1/mean) - 1).
    const expected = (scale: number) =>
      EVENT_NAMES.reduce((sum, _, name) => {
        const mean = EXTRA[name] * scale;
        const extra = name === PURCHASE ? 0.1 : mean === 0 ? 0 : 1 / (Math.exp(1 / mean) - 1);
        return sum + presence(name) * (1 + extra);
      }, 0);
    let [lo, hi] = [0.01, 100];
    for (let step = 0; step < 60; step++) {
      const mid = (lo + hi) / 2;
      if (expected(mid) < events) lo = mid;
      else hi = mid;
    }
    this.scale = lo;
    return { lastPlayed, playingDays: byKind[0] + byKind[1] + byKind[2] };
  }

  /** Day `d`'s events by name. */
  day(d: number): NameDay[] {
    const byName: NameDay[] = EVENT_NAMES.map((_, name) =>
      name === PURCHASE ? { players: [], counts: [], cents: [] } : { players: [], counts: [] },
    );
    for (let i = 0, join = 0; i < this.joinStart[d + 1]; i++) {
      while (this.joinStart[join + 1] <= i) join++;
      if (!this.plays(i, join, d)) continue;
      for (let name = 0; name < EVENT_NAMES.length; name++) {
        const count = this.count(i, d, name);
        if (count === 0) continue;
        const day = byName[name];
        day.players.push(i);
        day.counts.push(count);
        if (day.cents) {
          let cents = 0;
          for (let j = 0; j < count; j++) cents += this.priceCents(i, d, j);
          day.cents.push(cents);
        }
      }
    }
    return byName;
  }

  /** The player's tags: a few follow their kind, the rest are drawn. */
  tagsOf(i: number): string[] {
    const tags: string[] = [];
    const u = (t: number) => this.u(i, 0, Salt.Tag + t);
    const kind = this.kind[i];
    if (kind === WHALE) tags.push("whale");
    if (this.joinDay(i) < 14 && u(1) < 0.04) tags.push("beta_tester");
    const region = u(2);
    if (region < 0.35) tags.push("region_eu");
    else if (region < 0.6) tags.push("region_na");
    else if (region < 0.8) tags.push("region_asia");
    const platform = u(5);
    if (platform < 0.4) tags.push("platform_ios");
    else if (platform < 0.78) tags.push("platform_android");
    if (u(7) < KINDS[kind].guild) tags.push("guild_member");
    if (u(8) < 0.1) tags.push("newsletter");
    if (u(9) < 0.03) tags.push("creator");
    return tags;
  }

  /** The player's tier (the materialised trait), or null for the tenth without one. */
  tierOf(i: number): string | null {
    const u = this.u(i, 0, Salt.Tier);
    return TIERS.find(([, below]) => u < below)?.[0] ?? null;
  }

  partnerId(i: number): string {
    return partnerIdOf(this.shape.seed, i);
  }

  /** When the player was first seen (their first day) and last seen (their last day of play), at a drawn second. */
  seenAt(i: number, lastPlayed: number): { first: Date; last: Date } {
    const at = (d: number, salt: number) =>
      new Date(
        ((this.shape.lastDay - this.shape.days + 1 + d) * 86_400 + Math.floor(this.u(i, d, salt) * 86_400)) * 1000,
      );
    const first = at(this.joinDay(i), Salt.Join);
    const last = at(lastPlayed, Salt.Join + 1);
    return { first, last: last < first ? first : last };
  }
}
