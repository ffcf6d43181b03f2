import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  EventNameCountSchema,
  type EventService,
  IngestResponseSchema,
  ListNamesResponseSchema,
  ListPropertiesResponseSchema,
  RejectedEventSchema,
  SummedPropertySchema,
  TrendsResponseSchema,
  UpdatePropertyResponseSchema,
} from "../../../gen/platformapi/v1/events_pb.js";
import {
  ActivePointSchema,
  ActiveResponseSchema,
  ActiveSeriesSchema,
  RetentionCohortSchema,
  RetentionResponseSchema,
  RetentionSeriesSchema,
} from "../../../gen/platformapi/v1/kpis_pb.js";
import type { Events, Freshness, SplitBy } from "../../events/events.js";
import { projectOf } from "../calls/caller.js";
import { protoKeyPaths, unreadableTimestamps } from "../http/protocol.js";
import { eventNames } from "../../events/reads/query.js";
import { incomingEvents, readQuery, retentionOptions, trendsOptions } from "./event-requests.js";

/** EventService: queued ingestion, trends, event names, the summed properties and the KPIs (retention, active players). */
export function createEventService({ events }: { events: Events }): ServiceImpl<typeof EventService> {
  return {
    async ingest(req, ctx) {
      const outcome = await events.ingest(
        projectOf(ctx),
        incomingEvents(req.events, ctx.values.get(unreadableTimestamps)),
      );
      return create(IngestResponseSchema, {
        accepted: outcome.accepted,
        rejected: outcome.rejected.map((rejection) => create(RejectedEventSchema, rejection)),
        lagSeconds: outcome.lag.seconds,
        serverTime: timestampFromDate(outcome.serverTime),
      });
    },

    async trends(req, ctx) {
      const projectId = projectOf(ctx);
      const { series, freshness } = await events.trends(projectId, {
        query: readQuery(req, ctx.values.get(protoKeyPaths)),
        ...trendsOptions(req),
      });
      return create(TrendsResponseSchema, { series, ...freshnessOf(freshness) });
    },

    async listNames(req, ctx) {
      const { names, freshness } = await events.names(projectOf(ctx), readQuery(req, ctx.values.get(protoKeyPaths)));
      return create(ListNamesResponseSchema, {
        names: names.map(({ name, events }) => create(EventNameCountSchema, { name, events: BigInt(events) })),
        ...freshnessOf(freshness),
      });
    },

    async listProperties(_req, ctx) {
      const properties = await events.summedProperties(projectOf(ctx));
      return create(ListPropertiesResponseSchema, {
        properties: properties.map((one) => create(SummedPropertySchema, one)),
      });
    },

    async updateProperty(req, ctx) {
      const { name, property, sum } = req;
      const updated = await events.updateProperty(projectOf(ctx), { name, property, sum }, ctx.signal);
      return create(UpdatePropertyResponseSchema, { property: create(SummedPropertySchema, updated) });
    },

    async retention(req, ctx) {
      const { series, freshness } = await events.retention(projectOf(ctx), {
        query: readQuery(req, ctx.values.get(protoKeyPaths)),
        ...retentionOptions(req),
      });
      return create(RetentionResponseSchema, {
        series: series.map(({ tag, variant, values }) =>
          create(RetentionSeriesSchema, {
            tag: tag ?? undefined,
            variant,
            cohorts: values.map((cohort) => create(RetentionCohortSchema, cohort)),
          }),
        ),
        ...freshnessOf(freshness),
      });
    },

    async active(req, ctx) {
      const { series, freshness } = await events.active(projectOf(ctx), {
        query: readQuery(req, ctx.values.get(protoKeyPaths)),
        names: eventNames(req.names),
        splitBy: req.splitBy as SplitBy | undefined,
      });
      return create(ActiveResponseSchema, {
        series: series.map(({ tag, variant, values }) =>
          create(ActiveSeriesSchema, {
            tag: tag ?? undefined,
            variant,
            points: values.map((point) => create(ActivePointSchema, point)),
          }),
        ),
        ...freshnessOf(freshness),
      });
    },
  };
}

const freshnessOf = ({ completeThrough, lagSeconds }: Freshness) => ({
  completeThrough: timestampFromDate(completeThrough),
  lagSeconds,
});
