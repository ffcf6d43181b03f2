import { projectScopedId } from "../../db/ids.js";
import type { RollupDoc } from "../apply/absorb.js";
import type { DayCounts, PlayerRollup } from "./player-rollup.js";
import type { SumDays } from "../reads/sums.js";

/** A player's history as stored in `event_player_rollups`, one document a player. */
export interface PlayerRollupDoc extends RollupDoc {
  _id: string;
  project_id: string;
  identity_key: string;
  days?: DayCounts;
  sums?: SumDays;
  cohorts?: string[];
  /** The player's trait keys as of the last segment that touched it. */
  trait_keys?: string[];
  folded_into?: string | null;
  hw: number;
}

export const playerRollupId = (projectId: string, identityKey: string): string =>
  projectScopedId(projectId, identityKey);

/** A stored history as the code reads it. */
export function toRollup(doc: PlayerRollupDoc): PlayerRollup {
  return {
    identityKey: doc.identity_key,
    days: doc.days ?? {},
    sums: doc.sums ?? {},
    cohorts: doc.cohorts ?? [],
    foldedInto: doc.folded_into ?? null,
    hw: doc.hw,
  };
}
