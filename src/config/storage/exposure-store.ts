import type { Db } from "mongodb";
import type { Engine } from "../../db/engine.js";
import { insertAllNew } from "../../db/insert-all-new.js";
import { projectScopedId } from "../../db/ids.js";

/** A player's first exposure to an experiment: the variant answered, and when. */
export interface Exposure {
  experiment: string;
  variant: string;
}

interface ExposureDoc {
  _id: string;
  variant: string;
  exposed_at: Date;
}

/** Experiment names hold no "/", so the identity key (which may) ends the id. */
const exposureId = (projectId: string, experiment: string, identityKey: string) =>
  projectScopedId(projectId, `${experiment}/${identityKey}`);

/**
 * The experiment_exposures collection: one document per player and experiment, `_id`
 * `<project>/<experiment>/<identity key>`, inserted once and never changed: of any number of concurrent first
 * exposures (instances included), the unique `_id` lets exactly one in.
 */
export class ExposureStore {
  private readonly exposures;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.exposures = db.collection<ExposureDoc>("experiment_exposures");
  }

  /** The variant recorded for the player in each of `experiments` that has one. */
  async recorded(projectId: string, identityKey: string, experiments: readonly string[]): Promise<Map<string, string>> {
    const ids = experiments.map((experiment) => exposureId(projectId, experiment, identityKey));
    const docs = await this.engine.readByIds(this.exposures, ids);
    return new Map(experiments.flatMap((experiment, i) => (docs[i] ? [[experiment, docs[i].variant]] : [])));
  }

  /** The exposures of each player of `identityKeys` to each of `experiments` that has one: the variant and when. */
  async ofPlayers(projectId: string, identityKeys: readonly string[], experiments: readonly string[]) {
    const pairs = identityKeys.flatMap((identityKey) => experiments.map((experiment) => ({ identityKey, experiment })));
    const docs = await this.engine.readByIds(
      this.exposures,
      pairs.map(({ identityKey, experiment }) => exposureId(projectId, experiment, identityKey)),
    );
    return pairs.flatMap((pair, i) => {
      const doc = docs[i];
      return doc ? [{ ...pair, variant: doc.variant, exposedAt: doc.exposed_at }] : [];
    });
  }

  /** Deletes the exposures of each player of `identityKeys` to each of `experiments` (an erasure). */
  async delete(projectId: string, identityKeys: readonly string[], experiments: readonly string[]): Promise<void> {
    const ids = identityKeys.flatMap((key) => experiments.map((experiment) => exposureId(projectId, experiment, key)));
    if (ids.length > 0) await this.exposures.deleteMany({ _id: { $in: ids } });
  }

  /** Inserts each exposure; answers the experiments another call recorded first (their documents left as they are). */
  async insert(projectId: string, identityKey: string, exposures: readonly Exposure[], at: Date): Promise<string[]> {
    const docs = exposures.map(({ experiment, variant }) => ({
      _id: exposureId(projectId, experiment, identityKey),
      variant,
      exposed_at: at,
    }));
    const refused = await insertAllNew(this.engine, this.exposures, docs);
    return exposures.filter((_, i) => refused.has(i)).map((exposure) => exposure.experiment);
  }
}
