import type { Logger } from "../../log.js";
import type { PlayerStores } from "../storage/stores.js";

export interface CounterRepairOptions {
  stores: PlayerStores;
  /**
   * Whether a counter above its records may be lowered: only where one
   * process owns the database. With several instances, another one may hold
   * slots it has reserved and not yet written, and lowering would let the
   * project pass its limit; there a counter is only ever raised.
   */
  lower: boolean;
  log?: Logger;
}

/**
 * Sets each project's tag and trait-key counters to the number of its
 * records where they disagree: a registration that failed between taking its
 * slots and writing its records, and could not give them back, leaves the
 * counter high. Writes each project's tag list again from its records (a
 * crash may have cut a registry write before its copy). Runs once at start;
 * each project costs a read of its tags and a count of its trait keys by
 * project_id, scans of player_tags and of player_trait_keys on FerretDB.
 */
export async function repairRegistryCounters({ stores, lower, log }: CounterRepairOptions): Promise<void> {
  for (const counter of await stores.counters.all()) {
    const [{ length: tags }, traitKeys] = await Promise.all([
      stores.tags.rewriteList(counter.projectId),
      stores.traitKeys.countInProject(counter.projectId),
    ]);
    const wrong = (stored: number, records: number) => (lower ? stored !== records : stored < records);
    if (!wrong(counter.tags, tags) && !wrong(counter.traitKeys, traitKeys)) continue;
    const counts = {
      tags: lower ? tags : Math.max(tags, counter.tags),
      traitKeys: lower ? traitKeys : Math.max(traitKeys, counter.traitKeys),
    };
    await stores.counters.setCounts(counter.projectId, counts);
    log?.info({ projectId: counter.projectId, was: counter, now: counts }, "registry counters set to their records");
  }
}
