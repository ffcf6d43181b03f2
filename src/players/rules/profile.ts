import type { TraitValue } from "./normalise.js";

/** A stored player profile. `version` guards concurrent writers (compare-and-swap). */
export interface ProfileRecord {
  projectId: string;
  identityKey: string;
  partnerUserId: string | null;
  deviceId: string | null;
  platformUserId: string | null;
  tags: string[];
  traits: Map<string, TraitValue>;
  version: number;
  firstSeenAt: Date;
  lastSeenAt: Date;
  /** The player's number in the project's sets (sets/player-numbers.ts); absent until the profile is first written. */
  number?: number;
  /** Identity keys of the folded profiles whose data this profile took in: each is merged once (see ProfileSlot.snapshot). */
  absorbed?: readonly string[];
  /** The request_ids of the last calls that wrote this profile (request-ids.ts, REQUESTS_KEPT): a retry's entries apply once. */
  requests?: readonly WrittenBy[];
}

/** A players/update call with a request_id that wrote a profile, and when. */
export interface WrittenBy {
  id: string;
  at: Date;
}

/** A profile as read for a write: absent (version 0), live, or a tombstone left by a fold. */
export interface ProfileSlot {
  profile: ProfileRecord | null;
  version: number;
  /** The identity key this profile was folded into; its document stays as a tombstone that guards late writers. */
  foldedInto: string | null;
  /**
   * On a tombstone: the profile as it was folded. The tombstone is written
   * before the profile it folds into, so no write lands between the data a
   * fold merges and the tombstone; until the target lists the key in
   * `absorbed`, the next write of the target through this key merges it.
   */
  snapshot?: ProfileRecord;
}

/** A slot's next content: a profile, a fold's tombstone, or an erasure's marker (no data; its version guards late writers). */
export type SlotContent =
  { profile: ProfileRecord } | { foldedInto: string; snapshot?: ProfileRecord } | { erased: true };

export interface SlotWrite {
  identityKey: string;
  readVersion: number;
  next: SlotContent;
}
