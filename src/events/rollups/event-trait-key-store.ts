import type { Db } from "mongodb";
import { projectScopedId } from "../../db/ids.js";
import { KeyedLock } from "../../db/keyed-lock.js";

/** What the events side knows of one trait key of a project. */
export interface TraitKeyState {
  /** traitIndexEntry() of the values seen, while deciding; at most MAX_COHORT_VALUES + 1. */
  values: string[];
  /** Players seen carrying the key, while deciding; at most PROOF_HOLDERS. */
  holders: string[];
  /** Materialisation was asked for (enabled, or proved low-cardinality). */
  requested: boolean;
  /** The queue segment after which every holder's history is in the key's cohorts; null until then. */
  readySeq: number | null;
}

interface TraitKeyDoc {
  _id: string;
  project_id: string;
  key: string;
  values: string[];
  holders: string[];
  requested: boolean;
  ready_seq: number | null;
}

/** The project's materialised keys: written by the apply worker alone, in queue order. */
interface MaterialisedDoc {
  _id: string;
  keys: string[];
}

/** Trait keys never start with "_", so this `_id` is no key's. */
const materialisedId = (projectId: string) => projectScopedId(projectId, "_materialised");

/**
 * The event_trait_keys collection: per project and trait key, the evidence of
 * its cardinality and whether its cohorts are materialised; per project, the
 * keys the apply worker places players in cohorts by. Every read is by `_id`.
 */
export class EventTraitKeyStore {
  private readonly keys;
  private readonly materialised;
  private readonly locks = new KeyedLock();
  /**
   * The materialised keys by project, kept from the first read: only the apply worker reads and adds to them, under
   * the queue's lease, and it forgets them when its lease lapsed (another worker may have added some meanwhile).
   */
  private readonly knownMaterialised = new Map<string, Set<string>>();

  constructor(db: Db) {
    this.keys = db.collection<TraitKeyDoc>("event_trait_keys");
    this.materialised = db.collection<MaterialisedDoc>("event_trait_keys");
  }

  async find(projectId: string, key: string): Promise<TraitKeyState | null> {
    const doc = await this.keys.findOne({ _id: projectScopedId(projectId, key) });
    return doc && { values: doc.values, holders: doc.holders, requested: doc.requested, readySeq: doc.ready_seq };
  }

  /** The evidence the apply worker gathered. */
  observed(projectId: string, key: string, { values, holders }: Pick<TraitKeyState, "values" | "holders">) {
    return this.set(projectId, key, { values, holders });
  }

  request(projectId: string, key: string) {
    return this.set(projectId, key, { requested: true });
  }

  ready(projectId: string, key: string, seq: number) {
    return this.set(projectId, key, { requested: true, ready_seq: seq });
  }

  /** Sets `fields`; writes to one document are serialised in-process (FerretDB loses concurrent ones). */
  private set(projectId: string, key: string, fields: Partial<TraitKeyDoc>): Promise<void> {
    const _id = projectScopedId(projectId, key);
    const initial = { project_id: projectId, key, values: [], holders: [], requested: false, ready_seq: null };
    const setOnInsert = Object.fromEntries(Object.entries(initial).filter(([field]) => !(field in fields)));
    return this.locks.run([_id], async () => {
      await this.keys.updateOne({ _id }, { $set: fields, $setOnInsert: setOnInsert }, { upsert: true });
    });
  }

  async materialisedKeys(projectId: string): Promise<Set<string>> {
    const known = this.knownMaterialised.get(projectId);
    if (known) return new Set(known);
    const doc = await this.materialised.findOne({ _id: materialisedId(projectId) });
    const keys = new Set(doc?.keys ?? []);
    this.knownMaterialised.set(projectId, new Set(keys));
    return keys;
  }

  /** The apply worker's lease lapsed before it took it again: what it knew may be missing another worker's keys. */
  leaseLapsed(): void {
    this.knownMaterialised.clear();
  }

  async addMaterialised(projectId: string, key: string): Promise<void> {
    try {
      await this.materialised.updateOne(
        { _id: materialisedId(projectId) },
        { $addToSet: { keys: key } },
        { upsert: true },
      );
    } catch (error) {
      // Written or not: read again next time.
      this.knownMaterialised.delete(projectId);
      throw error;
    }
    this.knownMaterialised.get(projectId)?.add(key);
  }
}
