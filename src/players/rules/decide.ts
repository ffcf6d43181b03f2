import { deviceKey, partnerKey, partnerOf } from "./identity-key.js";
import type { DeviceLink } from "../storage/link-stores.js";
import {
  applyOperations,
  cohortsChanged,
  foldDevice,
  inFieldOrder,
  NO_OPERATIONS,
  playerLimitBroken,
  type DroppedItem,
  type Operations,
  type PlayerLimitCode,
  type PlayerState,
} from "./operations.js";
import type { ProfileRecord, ProfileSlot, SlotContent } from "./profile.js";
import type { ProjectLimitCode, RegistrationNeed } from "../rounds/registration.js";
import { requestsAfter } from "./request-ids.js";

export type EntryRejectCode = PlayerLimitCode | ProjectLimitCode | "missing_identity";

/** One entry of a round, normalised: an update entry, or the fold a verified launch asks for. */
export interface RoundEntry {
  index: number;
  partnerUserId: string | null;
  deviceId: string | null;
  /** A profile of the same player folded into the target besides the device's (a partner id the player left). */
  foldKey: string | null;
  ops: Operations;
  /** A verified launch: the target profile is tied to this platform user. */
  platformUserId: string | null;
  /** False for a verified launch: it creates no profile for a player that has none. */
  createsProfile: boolean;
  /** The call's request_id (players/update), recorded on the profiles it writes; null without one. */
  requestId: string | null;
}

/** An entry that only folds `deviceId`'s profile (and `foldKey`'s) into `partnerUserId`'s: a link, nothing else to apply. */
export function foldEntry(fold: {
  index: number;
  partnerUserId: string;
  deviceId: string | null;
  foldKey?: string | null;
  platformUserId?: string | null;
}): RoundEntry {
  const { index, partnerUserId, deviceId, foldKey = null, platformUserId = null } = fold;
  return {
    index,
    partnerUserId,
    deviceId,
    foldKey,
    ops: NO_OPERATIONS,
    platformUserId,
    createsProfile: false,
    requestId: null,
  };
}

/** What the round read: every profile its entries may touch, the links of their devices, and account links. */
export interface RoundReads {
  projectId: string;
  now: Date;
  slots: ReadonlyMap<string, ProfileSlot>;
  links: ReadonlyMap<string, DeviceLink | null>;
  /** The platform user of each partner id among the targets without a profile (a verify came first). */
  accounts: ReadonlyMap<string, string | null>;
  /** Tombstones met in earlier rounds of the call: identity key → the key its profile was folded into. */
  redirects: ReadonlyMap<string, string>;
  /** Profiles an earlier attempt of the call wrote (their `requests` name its request_id): its entries there are applied. */
  replayed: ReadonlySet<string>;
}

export type EntryDecision =
  | { kind: "applied"; targetKey: string | null; profile: ProfileRecord | null; dropped: DroppedItem[] }
  /** `targetKey`: the profile whose read decided it (null without identity); the entry runs again if its write lost. */
  | { kind: "rejected"; code: EntryRejectCode; targetKey: string | null }
  /** The target is a tombstone: the entry runs again in the next round, on the profile it was folded into. */
  | { kind: "redirected"; from: string; to: string };

/** The round's outcome in memory: what each entry did and what must be written. */
export interface RoundPlan {
  decisions: Map<number, EntryDecision>;
  /** Final content of every profile the round changes, with the slot it was read in. */
  writes: Map<string, { read: ProfileSlot; next: SlotContent }>;
  links: Map<string, DeviceLink>;
  needs: RegistrationNeed[];
  /** Tags the round gave players (their last_seen_at moves). */
  given: Set<string>;
}

const stateOf = (profile: ProfileRecord | null): PlayerState => ({
  tags: profile?.tags ?? [],
  traits: profile?.traits ?? new Map(),
});

/**
 * Decides every entry of a round in request order, on profiles held in
 * memory: a later entry about a player sees what the earlier ones did. An
 * entry in `rejected` (a project limit the registration found) is left out.
 */
export function decideRound(
  reads: RoundReads,
  entries: readonly RoundEntry[],
  rejected: ReadonlyMap<number, EntryRejectCode>,
) {
  const plan: RoundPlan = { decisions: new Map(), writes: new Map(), links: new Map(), needs: [], given: new Set() };
  const current = (key: string) => plan.writes.get(key)?.next ?? contentOf(reads.slots.get(key));
  const linkOf = (deviceId: string) => plan.links.get(deviceId) ?? reads.links.get(deviceId) ?? null;
  for (const entry of entries) {
    const code = rejected.get(entry.index);
    plan.decisions.set(
      entry.index,
      code
        ? { kind: "rejected", code, targetKey: targetOf(entry, linkOf, reads.redirects) }
        : decideEntry(reads, plan, entry, current, linkOf),
    );
  }
  return plan;
}

function contentOf(slot: ProfileSlot | undefined): SlotContent | null {
  if (!slot) return null;
  if (slot.foldedInto !== null) return { foldedInto: slot.foldedInto, snapshot: slot.snapshot };
  return slot.profile && { profile: slot.profile };
}

/** The profile an entry writes: the partner's, the device's owner's, or the device's own; null without identity. */
export function targetOf(
  entry: Pick<RoundEntry, "partnerUserId" | "deviceId">,
  linkOf: (deviceId: string) => DeviceLink | null,
  redirects: ReadonlyMap<string, string>,
): string | null {
  let key: string;
  if (entry.partnerUserId !== null) key = partnerKey(entry.partnerUserId);
  else if (entry.deviceId === null) return null;
  else {
    const owner = linkOf(entry.deviceId);
    key = owner ? partnerKey(owner.partnerUserId) : deviceKey(entry.deviceId);
  }
  return followRedirects(key, redirects);
}

function followRedirects(key: string, redirects: ReadonlyMap<string, string>): string {
  for (let hops = 0; hops < 8 && redirects.has(key); hops++) key = redirects.get(key)!;
  return key;
}

function decideEntry(
  reads: RoundReads,
  plan: RoundPlan,
  entry: RoundEntry,
  current: (key: string) => SlotContent | null,
  linkOf: (deviceId: string) => DeviceLink | null,
): EntryDecision {
  const targetKey = targetOf(entry, linkOf, reads.redirects);
  if (targetKey === null) return { kind: "rejected", code: "missing_identity", targetKey };
  const target = current(targetKey);
  if (target && "foldedInto" in target) return { kind: "redirected", from: targetKey, to: target.foldedInto };
  const profile = target && "profile" in target ? target.profile : null;
  // A retry of a call that failed after writing this profile: its entries here are applied already.
  if (reads.replayed.has(targetKey)) return { kind: "applied", targetKey: null, profile, dropped: [] };
  const folded = foldedProfiles(entry, targetKey, current, reads.redirects);
  if (!entry.createsProfile && folded.length === 0 && (!profile || profile.platformUserId === entry.platformUserId)) {
    linkDevice(reads, plan, entry, entry.platformUserId);
    return { kind: "applied", targetKey: null, profile: null, dropped: [] };
  }
  const base = folded.reduce((state, [, p]) => foldDevice(state, stateOf(p)), stateOf(profile));
  const { state: next, dropped } = applyOperations(base, entry.ops);
  const limit = playerLimitBroken(next);
  if (limit) return { kind: "rejected", code: limit, targetKey };

  const partnerUserId = partnerOf(targetKey);
  const platformUserId =
    entry.platformUserId ??
    profile?.platformUserId ??
    (partnerUserId === null ? null : (reads.accounts.get(partnerUserId) ?? null));
  const nextProfile: ProfileRecord = {
    projectId: reads.projectId,
    identityKey: targetKey,
    partnerUserId,
    deviceId: partnerUserId === null ? entry.deviceId : null,
    platformUserId,
    tags: next.tags,
    traits: next.traits,
    version: 0,
    firstSeenAt: earliest([profile?.firstSeenAt, ...folded.map(([, p]) => p.firstSeenAt)]) ?? reads.now,
    lastSeenAt: reads.now,
    ...(profile?.number !== undefined && { number: profile.number }),
    absorbed: [
      ...new Set([...(profile?.absorbed ?? []), ...folded.flatMap(([key, p]) => [key, ...(p.absorbed ?? [])])]),
    ],
    requests: requestsAfter(profile, entry.requestId, reads.now),
  };
  const allDropped = inFieldOrder([...entry.ops.dropped, ...dropped]);
  // An entry that changes nothing writes nothing (last_seen_at stays): a player without tags or traits has no profile.
  const unchanged = profile
    ? platformUserId === profile.platformUserId && !cohortsChanged(profile, next)
    : next.tags.length === 0 && next.traits.size === 0;
  if (folded.length === 0 && unchanged) {
    linkDevice(reads, plan, entry, platformUserId);
    return { kind: "applied", targetKey: profile && targetKey, profile: profile ?? nextProfile, dropped: allDropped };
  }
  setContent(reads, plan, targetKey, { profile: nextProfile });
  for (const [key, p, live] of folded) if (live) setContent(reads, plan, key, { foldedInto: targetKey, snapshot: p });
  linkDevice(reads, plan, entry, platformUserId);
  plan.needs.push({
    index: entry.index,
    tags: next.tags.filter((tag) => !base.tags.includes(tag)),
    keys: [...next.traits.keys()].filter((key) => !base.traits.has(key)),
    labels: entry.ops.labels,
  });
  for (const tag of [...(entry.ops.tags ?? []), ...entry.ops.tagsAdd]) if (next.tags.includes(tag)) plan.given.add(tag);
  return { kind: "applied", targetKey, profile: nextProfile, dropped: allDropped };
}

/**
 * The profiles the entry folds into its target: the device's own, when the
 * target is another profile (a partner id given, or the device linked: a
 * writer that stopped before its fold can leave one beside the link), and
 * `foldKey`'s; live ones (`true`: their tombstone is written first), and the
 * snapshot of a tombstone that leads to the target which the target has not
 * absorbed yet (its fold stopped or lost between the tombstone and the target).
 */
function foldedProfiles(
  entry: RoundEntry,
  targetKey: string,
  current: (key: string) => SlotContent | null,
  redirects: ReadonlyMap<string, string>,
) {
  const target = current(targetKey);
  const absorbed = (target && "profile" in target && target.profile.absorbed) || [];
  const keys = [
    entry.deviceId === null ? null : deviceKey(entry.deviceId),
    entry.foldKey,
    // A partner id redirected to its target: its tombstone's snapshot may still wait.
    entry.partnerUserId === null ? null : partnerKey(entry.partnerUserId),
  ];
  const folded: [string, ProfileRecord, boolean][] = [];
  for (const key of new Set(keys)) {
    if (key === null || key === targetKey) continue;
    const content = current(key);
    if (content && "profile" in content) folded.push([key, content.profile, true]);
    else if (
      content &&
      "foldedInto" in content &&
      content.snapshot &&
      !absorbed.includes(key) &&
      followRedirects(content.foldedInto, redirects) === targetKey
    ) {
      folded.push([key, content.snapshot, false]);
    }
  }
  return folded;
}

function setContent(reads: RoundReads, plan: RoundPlan, key: string, next: SlotContent): void {
  const read = plan.writes.get(key)?.read ?? reads.slots.get(key) ?? { profile: null, version: 0, foldedInto: null };
  plan.writes.set(key, { read, next });
}

/** An entry with both identities, or a verified launch, links its device to the partner (written only when it changes). */
function linkDevice(reads: RoundReads, plan: RoundPlan, entry: RoundEntry, platformUserId: string | null): void {
  if (entry.partnerUserId === null || entry.deviceId === null) return;
  const link = { partnerUserId: entry.partnerUserId, platformUserId };
  const before = plan.links.get(entry.deviceId) ?? reads.links.get(entry.deviceId);
  if (before?.partnerUserId === link.partnerUserId && before.platformUserId === link.platformUserId) return;
  plan.links.set(entry.deviceId, link);
}

function earliest(dates: (Date | undefined)[]): Date | undefined {
  const present = dates.filter((date): date is Date => date !== undefined);
  return present.length === 0 ? undefined : new Date(Math.min(...present.map((date) => date.getTime())));
}
