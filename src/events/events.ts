import type { Backpressure } from "./queue/backpressure.js";
import type { Clock } from "../clock.js";
import type { IncomingEvent } from "./queue/entries.js";
import { ingest, type IngestOutcome } from "./queue/ingest.js";
import { stepsOf, type StepTimer } from "../steps.js";
import type { Lag, QueueLagMeter } from "./queue/lag.js";
import type { QueueWriter } from "./queue/queue-writer.js";
import { nameTotals, seriesOf, trendCounts, type TrendSeries } from "./reads/trends.js";
import { dayOf, type RetentionWindow } from "./rollup-keys.js";
import type { ApplyWorker } from "./apply/worker.js";
import type { CohortFilter, EventQuery } from "./reads/query.js";
import { InvalidArgumentError } from "../errors.js";
import { activePoints, type ActivePoint } from "./kpis/active-players.js";
import { retentionTables, type RetentionCohort, type RetentionMode } from "./kpis/cohort-retention.js";
import { bucketsOf, dayNumber, type Interval } from "./kpis/periods.js";
import type { PlayerDirectory } from "./player-directory.js";
import type { EventNameStore } from "./rollups/event-name-store.js";
import type { SummedPropertyStore } from "./rollups/summed-property-store.js";
import { sumIdsOf, withSummed, withoutSummed } from "./reads/sums.js";
import type { DaySetReader } from "./reads/day-sets.js";
import type { Cohort } from "./reads/cohort-counts.js";

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** With split_by and no tags given: the tags with the most players, at most this many. */
export const MAX_SPLIT_TAGS = 20;

export interface TrendsRequest {
  query: EventQuery;
  names?: string[];
  splitBy?: SplitBy;
  interval: Interval;
  /** A property whose totals the summed names' points carry. */
  sum?: string;
}

export interface RetentionRequest {
  query: EventQuery;
  interval: "day" | "week";
  /** Absent: 30 days or 12 weeks. */
  periods?: number;
  startName?: string;
  returnName?: string;
  mode: RetentionMode;
  splitBy?: SplitBy;
}

export interface ActiveRequest {
  query: EventQuery;
  names?: string[];
  splitBy?: SplitBy;
}

/** How a read's series are split: one per tag, or one per variant of the filter's experiment. */
export type SplitBy = "tags" | "variant";

/** Which split series a series is: its tag or its variant (neither when not split). */
export interface SeriesKey {
  tag: string | null;
  variant?: string;
}

/** A KPI's series: one for the whole filter (tag null), or one per tag or variant when split. */
export interface KpiSeries<T> extends SeriesKey {
  values: T[];
}

/** A property of an event name and whether the project sums it. */
export interface PropertySum {
  name: string;
  property: string;
  sum: boolean;
}

/** How far the events a chart counts reach. */
export interface Freshness {
  /** Every event received before this instant is counted. */
  completeThrough: Date;
  /** Age of the project's oldest accepted event not yet applied; 0 when none waits. */
  lagSeconds: number;
}

export interface EventsOptions {
  writer: QueueWriter;
  worker: ApplyWorker;
  lag: QueueLagMeter;
  reader: DaySetReader;
  directory: PlayerDirectory;
  window: RetentionWindow;
  names: EventNameStore;
  summed: SummedPropertyStore;
  backpressure: Backpressure;
  clock: Clock;
  steps: StepTimer;
}

/**
 * The events of every project: ingestion onto the project's queue (applied later by the ApplyWorker) and charts and
 * KPIs as set arithmetic over the days' sets and the cohorts' (docs/architecture.md, "Cohorts as sets").
 */
export class Events {
  constructor(private readonly options: EventsOptions) {}

  ingest(projectId: string, events: readonly IncomingEvent[]): Promise<IngestOutcome> {
    return ingest(this.options, projectId, events);
  }

  /** A chart's daily (or weekly, monthly) counts per cohort, and how fresh they are. */
  async trends(projectId: string, request: TrendsRequest): Promise<{ series: TrendSeries[]; freshness: Freshness }> {
    const { query, splitBy, interval, sum } = request;
    const names = request.names?.length ? request.names : undefined;
    const step = stepsOf("trends", this.options.steps);
    const sumIds = sum
      ? await step("sums", async () => sumIdsOf(await this.options.summed.list(projectId), sum, names))
      : new Map<string, string>();
    const freshness = await step("freshness", () => this.freshness(projectId));
    const split = await step("split", () => this.split(projectId, query.cohort, splitBy));
    const days = this.inWindow(query.days);
    const counts = await step("counts", () =>
      trendCounts(this.options.reader, projectId, {
        days,
        interval,
        names,
        cohorts: split.map(({ cohort }) => cohort),
        sumIds: new Set(sumIds.values()),
      }),
    );
    const { dates } = bucketsOf(query.days, interval);
    const series = await step("series", () =>
      split.flatMap(({ tag, variant }, i) =>
        seriesOf(dates, counts[i], names, sumIds).map((one) => ({
          ...one,
          ...(tag !== null && { tag }),
          ...(variant !== undefined && { variant }),
        })),
      ),
    );
    return { series, freshness };
  }

  async names(projectId: string, query: EventQuery) {
    const freshness = await this.freshness(projectId);
    const cohort = await this.options.directory.cohortOf(projectId, query.cohort);
    const [counts] = await trendCounts(this.options.reader, projectId, {
      days: this.inWindow(query.days),
      interval: "day",
      cohorts: [cohort],
      sumIds: new Set(),
    });
    return { names: nameTotals(counts), freshness };
  }

  /** The properties the project sums (those whose back-fill is written), by name and property. */
  async summedProperties(projectId: string): Promise<PropertySum[]> {
    const pairs = (await this.options.summed.list(projectId)).filter((pair) => pair.ready);
    return pairs
      .map(({ name, property }) => ({ name, property, sum: true }))
      .sort((a, b) => (a.name === b.name ? compare(a.property, b.property) : compare(a.name, b.name)));
  }

  /**
   * Sums `name`'s `property` from now on, or stops. Turning it on answers once the raw events kept before it are
   * counted (its back-fill, queued in steps: sum-backfill.ts); a retry of a call cut short queues it again, which
   * counts nothing twice. `signal`: the caller went away (the back-fill goes on).
   */
  async updateProperty(projectId: string, change: PropertySum, signal?: AbortSignal): Promise<PropertySum> {
    const { summed, writer, worker } = this.options;
    const { name, property } = change;
    if (!change.sum) {
      await summed.update(projectId, (pairs) => withoutSummed(pairs, name, property));
      return change;
    }
    const pairs = await summed.update(projectId, (pairs, nextId) => withSummed(pairs, nextId, name, property));
    const pair = pairs.find((one) => one.name === name && one.property === property);
    if (pair && !pair.ready) {
      await writer.enqueue(projectId, { kind: "sum", id: pair.id });
      await worker.sumWritten(projectId, pair.id, signal);
    }
    return change;
  }

  /** Per start day (or week) of the range, its players and how many of them returned in each period after. */
  async retention(projectId: string, request: RetentionRequest) {
    const { query, interval } = request;
    const freshness = await this.freshness(projectId);
    const split = await this.split(projectId, query.cohort, request.splitBy);
    const { firstDay, today, sets } = await this.windowSets(projectId, dayOf(this.options.clock.now()));
    const tables = retentionTables(
      this.options.reader,
      projectId,
      sets,
      {
        ...request,
        from: dayNumber(query.days[0]),
        to: dayNumber(query.days.at(-1)!),
        periods: request.periods ?? (interval === "week" ? 12 : 30),
        today,
        firstDay,
      },
      split.map(({ cohort }) => cohort),
    );
    const series: KpiSeries<RetentionCohort>[] = split.map(({ cohort: _, ...key }, i) => ({
      ...key,
      values: tables[i],
    }));
    return { series, freshness };
  }

  /** Per day of the range: daily, weekly and monthly active players, and new players. */
  async active(projectId: string, request: ActiveRequest) {
    const { query, names } = request;
    const freshness = await this.freshness(projectId);
    const split = await this.split(projectId, query.cohort, request.splitBy);
    const to = query.days.at(-1)!;
    const { firstDay, sets } = await this.windowSets(projectId, to);
    const points = activePoints(
      this.options.reader,
      projectId,
      sets,
      { from: dayNumber(query.days[0]), to: dayNumber(to), names: names?.length ? names : undefined, firstDay },
      split.map(({ cohort }) => cohort),
    );
    const series: KpiSeries<ActivePoint>[] = split.map(({ cohort: _, ...key }, i) => ({ ...key, values: points[i] }));
    return { series, freshness };
  }

  /** The sets of the retention window's days through `through` (what a KPI's first days are found among). */
  private async windowSets(projectId: string, through: string) {
    const { window, clock, reader } = this.options;
    const firstDay = dayNumber(window.firstDay(clock.now()));
    const today = dayNumber(dayOf(clock.now()));
    const last = Math.min(dayNumber(through), today);
    const days = Array.from({ length: Math.max(0, last - firstDay + 1) }, (_, i) =>
      dayOf(new Date((firstDay + i) * 86_400_000)),
    );
    return { firstDay, today, sets: await reader.read(projectId, days) };
  }

  /**
   * The cohorts a read shows: the filter itself (tag null), or split by tags, one per tag (those of the filter,
   * else the MAX_SPLIT_TAGS with the most players), each with the filter's traits and tags_none; or by variant, one
   * per variant of the filter's experiment (those it names, else all), each with the rest of the filter.
   */
  private async split(
    projectId: string,
    filter: CohortFilter,
    splitBy: SplitBy | undefined,
  ): Promise<(SeriesKey & { cohort: Cohort })[]> {
    const { directory } = this.options;
    if (splitBy === "variant") {
      if (!filter.experiment) throw new InvalidArgumentError("split_by: variant needs an experiment (experiment)");
      const { name, variants } = await directory.experimentOf(projectId, filter.experiment);
      return Promise.all(
        variants.map(async (variant) => ({
          tag: null,
          variant,
          cohort: await directory.cohortOf(projectId, { ...filter, experiment: { name, variants: [variant] } }),
        })),
      );
    }
    if (splitBy !== "tags") return [{ tag: null, cohort: await directory.cohortOf(projectId, filter) }];
    const { traits, tagsNone } = filter;
    const tags = filter.tags.length > 0 ? filter.tags : await this.topTags(projectId, tagsNone);
    return Promise.all(
      tags.map(async (tag) => ({
        tag,
        cohort: await directory.cohortOf(projectId, { tags: [tag], tagsMatch: "any", traits, tagsNone }),
      })),
    );
  }

  /** The tags a split shows when none are given: the most players first, none of the excluded ones (all-zero series). */
  private async topTags(projectId: string, excluded: readonly string[]): Promise<string[]> {
    const tags = await this.options.directory.topTags(projectId, MAX_SPLIT_TAGS + excluded.length);
    return tags.filter((tag) => !excluded.includes(tag)).slice(0, MAX_SPLIT_TAGS);
  }

  /** The days of a range inside the retention window (days before it count nothing). */
  private inWindow(days: readonly string[]): string[] {
    const firstDay = this.options.window.firstDay(this.options.clock.now());
    return days.filter((day) => day >= firstDay);
  }

  /** Measured before the counts are read, so every event it calls counted was applied when they were. */
  private async freshness(projectId: string): Promise<Freshness> {
    const readAt = this.options.clock.now().getTime();
    const { seconds } = await this.options.lag.ofProject(projectId);
    return { completeThrough: new Date(readAt - seconds * 1000), lagSeconds: seconds };
  }

  /** The worst lag of every project's queue (`/readyz`, `/metrics`). */
  lag(): Promise<Lag> {
    return this.options.lag.measure();
  }
}
