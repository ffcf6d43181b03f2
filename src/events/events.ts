import type { Backpressure } from "./queue/backpressure.js";
import type { Clock } from "../clock.js";
import type { EventNameStore } from "./rollups/event-name-store.js";
import type { IncomingEvent } from "./queue/entries.js";
import { ingest, type IngestOutcome } from "./queue/ingest.js";
import { stepsOf, type StepTimer } from "../steps.js";
import type { QueueLagMeter, QueueWriter } from "./queue/queue.js";
import { nameTotals, seriesOf, type CohortReader, type TrendSeries } from "./reads/trends.js";
import { dayOf, type RetentionWindow } from "./rollup-keys.js";
import type { ApplyWorker } from "./apply/worker.js";
import type { CohortFilter, EventQuery } from "./reads/query.js";
import { activePoints, type ActivePoint } from "./kpis/active-players.js";
import { bucketCounts, withSums } from "./kpis/bucket-counts.js";
import { retentionTables, type RetentionCohort, type RetentionMode } from "./kpis/cohort-retention.js";
import { dayNumber, type Interval } from "./kpis/periods.js";
import type { PlayerActivity } from "./kpis/player-activity.js";
import type { PlayerDirectory } from "./player-directory.js";
import type { TraitCohorts, TraitMaterialisation } from "./apply/trait-cohorts.js";
import type { SummedPropertyStore } from "./rollups/summed-property-store.js";
import { sumIdsOf, withSummed, withoutSummed } from "./reads/sums.js";

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** With split_by and no tags given: the tags with the most players, at most this many. */
export const MAX_SPLIT_TAGS = 20;

export interface TrendsRequest {
  query: EventQuery;
  names?: string[];
  splitByTags: boolean;
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
  splitByTags: boolean;
}

export interface ActiveRequest {
  query: EventQuery;
  names?: string[];
  splitByTags: boolean;
}

/** A KPI's series: one for the whole filter (tag null), or one per tag when split. */
export interface KpiSeries<T> {
  tag: string | null;
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
  /** Age of the oldest accepted event not yet applied; 0 when none waits. */
  lagSeconds: number;
}

export interface EventsOptions {
  writer: QueueWriter;
  worker: ApplyWorker;
  /** The queue's lag (freshness, `/readyz`). */
  lag: QueueLagMeter;
  reader: CohortReader;
  /** The KPIs' read model: which players were active on which days. */
  activity: PlayerActivity;
  directory: PlayerDirectory;
  traitCohorts: TraitCohorts;
  window: RetentionWindow;
  names: EventNameStore;
  summed: SummedPropertyStore;
  backpressure: Backpressure;
  clock: Clock;
  steps: StepTimer;
}

/**
 * The events of every project: ingestion onto the queue (applied later by
 * the ApplyWorker) and charts from the rollups. Player changes move histories
 * between cohorts through Resyncs (apply/resyncs.ts).
 */
export class Events {
  constructor(private readonly options: EventsOptions) {}

  ingest(projectId: string, events: readonly IncomingEvent[]): Promise<IngestOutcome> {
    return ingest(this.options, projectId, events);
  }

  /**
   * Turns on materialised cohorts for a trait key of the project (idempotent).
   * Answers whether a filter on it reads them already; until then it is
   * answered exactly by the slower path. Null when the project has no such key.
   */
  async materialiseTrait(projectId: string, key: string): Promise<{ ready: boolean } | null> {
    if (!(await this.options.directory.hasTraitKey(projectId, key))) return null;
    const { traitCohorts } = this.options;
    const { ready, backfill } = await traitCohorts.materialise(projectId, key);
    if (backfill) {
      await this.options.writer.enqueue(projectId, { kind: "materialise", key }, 0, new Date(0));
      await traitCohorts.markRequested(projectId, key);
    }
    return { ready };
  }

  /** Per trait key of the project, in order: whether its cohorts are materialised, and read already. */
  traitMaterialisation(projectId: string, keys: readonly string[]): Promise<TraitMaterialisation[]> {
    return this.options.traitCohorts.materialisation(projectId, keys);
  }

  /** A chart's daily (or weekly, monthly) counts per cohort, and how fresh they are. */
  async trends(projectId: string, request: TrendsRequest): Promise<{ series: TrendSeries[]; freshness: Freshness }> {
    const { query, splitByTags, interval, sum } = request;
    const names = request.names?.length ? request.names : undefined;
    const { reader, summed } = this.options;
    const step = stepsOf("trends", this.options.steps);
    const sumIds = sum
      ? await step("sums", async () => sumIdsOf(await summed.list(projectId), sum, names))
      : new Map<string, string>();
    const ids = new Set(sumIds.values());
    const freshness = await step("freshness", () => this.freshness());
    const firstDay = this.firstDay();
    const split = await step("split", () => this.split(projectId, query.cohort, splitByTags));
    const cohorts = split.map(({ filter }) => filter);
    const byDay = interval === "day" || ids.size > 0;
    const days = byDay
      ? await step("counts", () => reader.countsOfEach(projectId, query, firstDay, cohorts, names, ids))
      : [];
    const { dates, counts } =
      interval === "day"
        ? { dates: query.days, counts: days }
        : await step("buckets", async () =>
            withSums(
              bucketCounts(await this.options.activity.of(projectId, cohorts), query.days, interval, firstDay),
              days,
            ),
          );
    const series = await step("series", () =>
      split.flatMap(({ tag }, i) =>
        seriesOf(dates, counts[i], names, sumIds).map((one) => (tag === null ? one : { ...one, tag })),
      ),
    );
    return { series, freshness };
  }

  /** The properties the project sums (those whose back-fill is written), by name and property. */
  async summedProperties(projectId: string): Promise<PropertySum[]> {
    const pairs = (await this.options.summed.list(projectId)).filter((pair) => pair.ready);
    return pairs
      .map(({ name, property }) => ({ name, property, sum: true }))
      .sort((a, b) => (a.name === b.name ? compare(a.property, b.property) : compare(a.name, b.name)));
  }

  /**
   * Sums `name`'s `property` from now on, or stops. Turning it on answers once the raw events kept before it
   * are counted (its back-fill, queued in steps: sum-backfill.ts); a retry of a call cut short queues it again,
   * which counts nothing twice. `signal`: the caller went away (the back-fill goes on).
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
      const seq = await writer.enqueue(projectId, { kind: "sum", id: pair.id }, 0, new Date(0));
      await worker.applied(seq, signal);
      await worker.sumWritten(projectId, pair.id, signal);
    }
    return change;
  }

  /** Per start day (or week) of the range, its players and how many of them returned in each period after. */
  async retention(projectId: string, request: RetentionRequest) {
    const { query, interval } = request;
    const freshness = await this.freshness();
    const split = await this.split(projectId, query.cohort, request.splitByTags);
    const activity = await this.options.activity.of(
      projectId,
      split.map(({ filter }) => filter),
    );
    const tables = retentionTables(activity, {
      ...request,
      from: dayNumber(query.days[0]),
      to: dayNumber(query.days.at(-1)!),
      periods: request.periods ?? (interval === "week" ? 12 : 30),
      today: dayNumber(dayOf(this.options.clock.now())),
      firstDay: dayNumber(this.firstDay()),
    });
    const series: KpiSeries<RetentionCohort>[] = split.map(({ tag }, i) => ({ tag, values: tables[i] }));
    return { series, freshness };
  }

  /** Per day of the range: daily, weekly and monthly active players, and new players. */
  async active(projectId: string, request: ActiveRequest) {
    const { query, names } = request;
    const freshness = await this.freshness();
    const split = await this.split(projectId, query.cohort, request.splitByTags);
    const activity = await this.options.activity.of(
      projectId,
      split.map(({ filter }) => filter),
    );
    const points = activePoints(activity, {
      from: dayNumber(query.days[0]),
      to: dayNumber(query.days.at(-1)!),
      names: names?.length ? names : undefined,
      firstDay: dayNumber(this.firstDay()),
    });
    const series: KpiSeries<ActivePoint>[] = split.map(({ tag }, i) => ({ tag, values: points[i] }));
    return { series, freshness };
  }

  /**
   * The cohorts a read shows: the filter itself (tag null), or split by tags, one per tag (those of the filter,
   * else the MAX_SPLIT_TAGS with the most players), each with the filter's traits and tags_none.
   */
  private async split(
    projectId: string,
    cohort: CohortFilter,
    splitByTags: boolean,
  ): Promise<{ tag: string | null; filter: CohortFilter }[]> {
    if (!splitByTags) return [{ tag: null, filter: cohort }];
    const { traits, tagsNone } = cohort;
    const tags = cohort.tags.length > 0 ? cohort.tags : await this.topTags(projectId, tagsNone);
    return tags.map((tag) => ({ tag, filter: { tags: [tag], tagsMatch: "any" as const, traits, tagsNone } }));
  }

  /** The tags a split shows when none are given: the most players first, none of the excluded ones (all-zero series). */
  private async topTags(projectId: string, excluded: readonly string[]): Promise<string[]> {
    const tags = await this.options.directory.topTags(projectId, MAX_SPLIT_TAGS + excluded.length);
    return tags.filter((tag) => !excluded.includes(tag)).slice(0, MAX_SPLIT_TAGS);
  }

  private firstDay(): string {
    return this.options.window.firstDay(this.options.clock.now());
  }

  async names(projectId: string, query: EventQuery) {
    const freshness = await this.freshness();
    return { names: nameTotals(await this.options.reader.counts(projectId, query, this.firstDay())), freshness };
  }

  /** Measured before the counts are read, so every event it calls counted was applied when they were. */
  private async freshness(): Promise<Freshness> {
    const readAt = this.options.clock.now().getTime();
    const { seconds } = await this.options.lag.measure();
    return { completeThrough: new Date(readAt - seconds * 1000), lagSeconds: seconds };
  }
}
