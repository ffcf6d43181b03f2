import type { Engine } from "../../db/engine.js";
import type { Db } from "mongodb";
import { projectScopedId } from "../../db/ids.js";
import { insertAllNew } from "../../db/insert-all-new.js";
import { sideBySide } from "../../db/gate.js";

interface TraitKeyDoc {
  _id: string;
  project_id: string;
  key: string;
  first_seen_at: Date;
  /** Asked for with players/traits/update, or proved low-cardinality (the listing says so). */
  materialised?: boolean;
}

/** The player_trait_keys collection: each project's trait-key registry, `_id` `<project>/<key>`. */
export class TraitKeyStore {
  private readonly traitKeys;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.traitKeys = db.collection<TraitKeyDoc>("player_trait_keys");
  }

  async createIndexes(): Promise<void> {
    await this.traitKeys.createIndex({ project_id: 1, key: 1 }, { unique: true });
  }

  /** The registered ones among `keys`, read side by side by `_id`. */
  async findRegistered(projectId: string, keys: readonly string[]): Promise<Set<string>> {
    const docs = await sideBySide(keys, (key) =>
      this.traitKeys.findOne({ _id: projectScopedId(projectId, key) }, { projection: { _id: 1 } }),
    );
    return new Set(keys.filter((_, i) => docs[i] !== null));
  }

  /** The project's keys (at most 200): by its `project_id` index on MongoDB, a scan of player_trait_keys on FerretDB. */
  async listInProject(projectId: string): Promise<string[]> {
    const docs = await this.traitKeys.find({ project_id: projectId }, { projection: { _id: 0, key: 1 } }).toArray();
    return docs.map((doc) => doc.key);
  }

  /** Which of `keys` are marked materialised. */
  async materialised(projectId: string, keys: readonly string[]): Promise<Set<string>> {
    const docs = await sideBySide(keys, (key) => this.traitKeys.findOne({ _id: projectScopedId(projectId, key) }));
    return new Set(keys.filter((_, i) => docs[i]?.materialised === true));
  }

  /** Marks a registered key materialised. */
  async materialise(projectId: string, key: string): Promise<void> {
    await this.traitKeys.updateOne({ _id: projectScopedId(projectId, key) }, { $set: { materialised: true } });
  }

  /** How many trait keys the project has registered (a scan of player_trait_keys on FerretDB). */
  async countInProject(projectId: string): Promise<number> {
    return this.traitKeys.countDocuments({ project_id: projectId });
  }

  /** Registers keys; returns those inserted (the others were registered meanwhile by another writer). */
  async insertTraitKeys(projectId: string, keys: readonly string[], now: Date): Promise<string[]> {
    const docs: TraitKeyDoc[] = keys.map((key) => ({
      _id: projectScopedId(projectId, key),
      project_id: projectId,
      key,
      first_seen_at: now,
    }));
    const failed = await insertAllNew(this.engine, this.traitKeys, docs);
    return keys.filter((_, i) => !failed.has(i));
  }
}
