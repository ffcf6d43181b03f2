import { Long, type Db } from "mongodb";
import { type Engine, throwIfRefused } from "../../db/engine.js";
import { isDuplicateKey } from "../../db/errors.js";
import type { Plan } from "../apply/plan.js";
import { sequenceId } from "../queue/segment-store.js";

/**
 * A plan as stored: one JSON string, its Int64 counts as `{"$long": "<decimal>"}` (FerretDB 1.24 decodes a
 * document field by field, so hundreds of changes as fields cost tens of ms to insert; see segment-store.ts).
 */
interface PlanDoc {
  _id: string;
  packed: string;
}

const packed = (plan: Plan): string =>
  JSON.stringify(plan, (_, value: unknown) => (value instanceof Long ? { $long: value.toString() } : value));

const unpacked = (text: string): Plan =>
  JSON.parse(text, (_, value: unknown) =>
    value !== null && typeof value === "object" && "$long" in value ? Long.fromString(String(value.$long)) : value,
  ) as Plan;

/**
 * The event_plans collection: the changes a segment makes, stored before
 * the first of them is written, so that a worker taking over after a crash
 * writes the same changes, never ones decided again from half-written state.
 */
export class PlanStore {
  private readonly plans;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.plans = db.collection<PlanDoc>("event_plans");
  }

  /** Stores `plan` for `seq` unless one is there already; answers the plan that is. */
  async settle(seq: number, plan: Plan): Promise<{ plan: Plan; mine: boolean }> {
    try {
      await this.plans.insertOne({ _id: sequenceId(seq), packed: packed(plan) });
      return { plan, mine: true };
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    return { plan: (await this.find(seq))!, mine: false };
  }

  async find(seq: number): Promise<Plan | null> {
    const doc = await this.plans.findOne({ _id: sequenceId(seq) });
    return doc && unpacked(doc.packed);
  }

  async delete(seq: number): Promise<void> {
    await this.plans.deleteOne({ _id: sequenceId(seq) });
  }

  /** Deletes the plans of `seqs`, a statement each (FerretDB scans for `$in`), as few commands as the engine allows. */
  async deleteAll(seqs: readonly number[]): Promise<void> {
    const failures = await this.engine.writeAll(
      this.plans,
      seqs.map((seq) => ({ deleteOne: { filter: { _id: sequenceId(seq) } } })),
    );
    throwIfRefused("plan deletes", failures);
  }
}
