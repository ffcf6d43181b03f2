import type { Rejection, Result } from "../../errors.js";
import type { EntryRejectCode } from "./decide.js";
import { deviceKey, partnerKey } from "./identity-key.js";
import type { DroppedItem } from "./operations.js";

/** An applied entry as players/update answers it: who the player is now, their tags, and the items dropped. */
export interface AppliedEntry {
  identityKey: string;
  partnerUserId: string | null;
  deviceId: string | null;
  platformUserId: string | null;
  tags: string[];
  dropped: DroppedItem[];
}

/** An entry applies whole or is rejected whole. */
export type EntryOutcome = Result<AppliedEntry, Rejection<EntryRejectCode>>;

/** players/update's answer: each entry's outcome in request order, and the time the call was decided at. */
export interface UpdateAnswer {
  outcomes: EntryOutcome[];
  serverTime: Date;
}

/** A call's answer, with every identity key it names (namesOf). */
export interface NamedAnswer {
  answer: UpdateAnswer;
  names: readonly string[];
}

/**
 * Every identity key an answer names: the ids each entry sent, and the player each applied one landed on (a device
 * linked to a partner id). An erasure of any of them forgets the answer.
 */
export function namesOf(
  entries: readonly { partnerUserId?: string; deviceId?: string }[],
  { outcomes }: UpdateAnswer,
): string[] {
  const names = new Set<string>();
  entries.forEach(({ partnerUserId, deviceId }, i) => {
    if (partnerUserId !== undefined) names.add(partnerKey(partnerUserId));
    if (deviceId !== undefined) names.add(deviceKey(deviceId));
    const outcome = outcomes[i];
    if (outcome.ok) names.add(outcome.value.identityKey);
  });
  return [...names];
}
