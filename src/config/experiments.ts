import type { Clock } from "../clock.js";
import { InvalidArgumentError } from "../errors.js";
import type { ConfigChanges } from "./changes.js";
import { pageOf, type Page } from "./config-entries.js";
import { decideExperiment, MAX_RUNNING_PER_PROJECT, type ExperimentInput } from "./rules/experiment.js";
import type { ExperimentRecord, ExperimentStore } from "./storage/experiment-store.js";

/** A project's experiments: their changes and their listing (assignment and exposures are Evaluation's). */
export class Experiments {
  constructor(private readonly deps: { store: ExperimentStore; changes: ConfigChanges; clock: Clock }) {}

  update(projectId: string, input: ExperimentInput): Promise<ExperimentRecord> {
    const { store, changes, clock } = this.deps;
    return changes.run(projectId, `experiment ${input.name}`, async () => {
      const current = await store.find(projectId, input.name);
      const experiment = decideExperiment(input, current?.experiment ?? null);
      if (experiment.state === "running" && current?.experiment.state !== "running") {
        await this.roomToRun(projectId);
      }
      const at = clock.now();
      const startedAt = current?.startedAt ?? (experiment.hasRun ? at : null);
      const written = await store.write(projectId, current?.version ?? 0, experiment, { at, startedAt });
      return written ? { value: written, change: { experiment }, keys: 0 } : undefined;
    });
  }

  async list(projectId: string, page: Page): Promise<{ items: ExperimentRecord[]; total: number }> {
    return pageOf(await this.deps.store.list(projectId), page);
  }

  private async roomToRun(projectId: string): Promise<void> {
    const running = (await this.deps.store.list(projectId)).filter((r) => r.experiment.state === "running");
    if (running.length >= MAX_RUNNING_PER_PROJECT) {
      throw new InvalidArgumentError(
        `state: the project runs ${MAX_RUNNING_PER_PROJECT} experiments, the most it can; stop one first`,
      );
    }
  }
}
