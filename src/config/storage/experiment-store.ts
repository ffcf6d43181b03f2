import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";
import type { Engine } from "../../db/engine.js";
import { projectIdRange, projectScopedId } from "../../db/ids.js";
import type { Experiment, ExperimentState, Variant } from "../rules/experiment.js";

/** An experiment as it is now, with the version of its document and when it last changed. */
export interface ExperimentRecord {
  experiment: Experiment;
  version: number;
  updatedAt: Date;
  /** When it first ran (null: never): no exposure is older. */
  startedAt: Date | null;
}

interface ExperimentDoc {
  _id: string;
  name: string;
  variants: Variant[];
  control: string;
  tags: string[];
  tags_match: "any" | "all";
  tags_none: string[];
  traits: string[];
  state: ExperimentState;
  has_run: boolean;
  version: number;
  updated_at: Date;
  started_at?: Date | null;
}

/**
 * The experiments collection: one document per experiment, `_id` `<project>/<name>`. A write replaces the version
 * it read: guarded by that version where the engine isolates updates (several instances on MongoDB), serialised per
 * project by the embedded engine's one owner.
 */
export class ExperimentStore {
  private readonly experiments;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.experiments = db.collection<ExperimentDoc>("experiments");
  }

  /** The project's experiments, by name. */
  async list(projectId: string): Promise<ExperimentRecord[]> {
    const docs = await this.experiments
      .find({ _id: projectIdRange(projectId) })
      .sort({ _id: 1 })
      .toArray();
    return docs.map(recordOf);
  }

  /** The names of an experiment's variants (null: no such experiment): CohortSets' ExperimentVariants. */
  async variantsOf(projectId: string, name: string): Promise<string[] | null> {
    return (await this.find(projectId, name))?.experiment.variants.map((variant) => variant.name) ?? null;
  }

  async find(projectId: string, name: string): Promise<ExperimentRecord | null> {
    const doc = await this.experiments.findOne({ _id: projectScopedId(projectId, name) });
    return doc && recordOf(doc);
  }

  /** Writes `experiment` over version `read` (0: none yet); false when another writer changed it first. */
  async write(
    projectId: string,
    read: number,
    experiment: Experiment,
    { at, startedAt }: { at: Date; startedAt: Date | null },
  ): Promise<ExperimentRecord | null> {
    const _id = projectScopedId(projectId, experiment.name);
    const doc = { ...docOf(_id, experiment, read + 1, at), started_at: startedAt };
    try {
      if (read === 0) await this.experiments.insertOne(doc);
      else {
        const filter = this.engine.isolatesUpdates ? { _id, version: read } : { _id };
        const { matchedCount } = await this.experiments.replaceOne(filter, doc);
        if (matchedCount === 0) return null;
      }
    } catch (error) {
      if (isDuplicateKey(error)) return null;
      throw error;
    }
    return recordOf(doc);
  }
}

function docOf(_id: string, experiment: Experiment, version: number, at: Date): ExperimentDoc {
  const { name, variants, control, cohort, state, hasRun } = experiment;
  return {
    _id,
    name,
    variants,
    control,
    tags: cohort.tags,
    tags_match: cohort.tagsMatch,
    tags_none: cohort.tagsNone,
    traits: cohort.traits,
    state,
    has_run: hasRun,
    version,
    updated_at: at,
  };
}

const recordOf = (doc: ExperimentDoc): ExperimentRecord => ({
  experiment: {
    name: doc.name,
    variants: doc.variants.map(({ name, weight }) => ({ name, weight })),
    control: doc.control,
    cohort: { tags: doc.tags, tagsMatch: doc.tags_match, tagsNone: doc.tags_none, traits: doc.traits },
    state: doc.state,
    hasRun: doc.has_run,
  },
  version: doc.version,
  updatedAt: doc.updated_at,
  startedAt: doc.started_at ?? null,
});
