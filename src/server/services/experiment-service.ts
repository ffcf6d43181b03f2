import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ListExperimentsResponseSchema,
  ResultsResponseSchema,
  SampleRatioSchema,
  VariantResultSchema,
  UpdateExperimentResponseSchema,
  type ExperimentService,
} from "../../../gen/platformapi/v1/config_pb.js";
import type { ConfigCapability } from "../../config/capability.js";
import type { ExposureMetric } from "../../events/kpis/exposure-metrics.js";
import { projectOf } from "../calls/caller.js";
import { protoKeyPaths } from "../http/protocol.js";
import { experimentInput, experimentMessage } from "./config-requests.js";
import { pageInfo, paging } from "./paging.js";

/** ExperimentService: experiments' variants, eligibility and state (assignment is in every verify and evaluation). */
export function createExperimentService({
  experiments,
  results,
}: ConfigCapability): ServiceImpl<typeof ExperimentService> {
  return {
    async updateExperiment(req, ctx) {
      const record = await experiments.update(projectOf(ctx), experimentInput(req, ctx.values.get(protoKeyPaths)));
      return create(UpdateExperimentResponseSchema, { experiment: experimentMessage(record) });
    },

    async results(req, ctx) {
      const { kind, days, name, property } = req.metric!;
      const answer = await results.of(projectOf(ctx), req.name, {
        kind: kind as ExposureMetric["kind"],
        days,
        ...(name && { name }),
        ...(property && { property }),
      });
      return create(ResultsResponseSchema, {
        control: answer.control,
        variants: answer.variants.map((variant) => create(VariantResultSchema, variant)),
        sampleRatio: create(SampleRatioSchema, answer.sampleRatio),
      });
    },

    async listExperiments(req, ctx) {
      const page = paging(req);
      const { items, total } = await experiments.list(projectOf(ctx), page);
      return create(ListExperimentsResponseSchema, {
        experiments: items.map(experimentMessage),
        experimentsInfo: pageInfo(total, page),
      });
    },
  };
}
