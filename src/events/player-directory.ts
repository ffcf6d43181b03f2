import type { TraitValue } from "../players/rules/normalise.js";
import type { CohortFilter } from "./reads/query.js";

/** What the events side needs to know about a player's profile. */
export interface PlayerCohorts {
  tags: readonly string[];
  traits: ReadonlyMap<string, TraitValue>;
}

/**
 * The players side as the events side reads it: the one membership (tags and
 * traits as of now) and device links. The apply worker reads it to place a
 * player's history in the cohorts the player is in now.
 */
export interface PlayerDirectory {
  /** Tags and traits of each player that has a profile, by identity key; read by `_id`. */
  cohortsOf(projectId: string, identityKeys: readonly string[]): Promise<Map<string, PlayerCohorts>>;
  /**
   * The player each of `identityKeys` is folded into now: a folded profile's
   * target, else a linked device's player. Keys that lead nowhere are absent.
   */
  foldTargets(projectId: string, identityKeys: readonly string[]): Promise<Map<string, string>>;
  /** The identity key of the player each linked device belongs to. */
  deviceOwners(projectId: string, deviceIds: readonly string[]): Promise<Map<string, string>>;
  /**
   * Every player in the cohort (exact), by identity key, as disjoint lists in no order (shared: read only; a list
   * stays the same object while its members do, so a reader may keep what it derived from one).
   */
  members(projectId: string, filter: CohortFilter): Promise<readonly (readonly string[])[]>;
  /** Whether the project has the trait key (some player was given it). */
  hasTraitKey(projectId: string, key: string): Promise<boolean>;
  /** The project's tags with the most players, most first, at most `limit`. */
  topTags(projectId: string, limit: number): Promise<string[]>;
}
