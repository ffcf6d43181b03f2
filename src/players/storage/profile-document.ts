import { projectScopedId } from "../../db/ids.js";
import type { TraitValue } from "../rules/normalise.js";
import type { ProfileRecord, ProfileSlot, SlotContent, SlotWrite, WrittenBy } from "../rules/profile.js";

/** A profile as player_profiles stores it (ProfileStore), and a slot's read and write in that shape. */
export interface ProfileDoc {
  _id: string;
  project_id: string;
  identity_key: string;
  partner_user_id: string | null;
  device_id: string | null;
  platform_user_id: string | null;
  tags: string[];
  /** Keys are validated trait keys (no `.`, no leading `$` or `_`); written only as a whole document. */
  traits: Record<string, TraitValue>;
  version: number;
  first_seen_at: Date;
  last_seen_at: Date;
  /** The player's number in the project's sets. */
  n?: number;
  /** Set on the tombstone a fold leaves: the identity key the profile now lives under. */
  folded_into?: string | null;
  /** Set on the marker an erasure leaves: no data but the key, and the version that guards a late writer. */
  erased?: boolean;
  /** On a tombstone: its other fields are the profile as it was folded */
  snapshot?: boolean;
  absorbed?: string[];
  requests?: WrittenBy[];
}

/** The slot a write leaves, as a read of it would answer. */
export function writtenSlot({ readVersion, next }: SlotWrite): ProfileSlot {
  const version = readVersion + 1;
  if ("profile" in next) return { profile: { ...next.profile, version }, version, foldedInto: null };
  if ("erased" in next) return { profile: null, version, foldedInto: null };
  const tombstone = { profile: null, version, foldedInto: next.foldedInto };
  return next.snapshot ? { ...tombstone, snapshot: { ...next.snapshot, version } } : tombstone;
}

export function slotOf(doc: ProfileDoc | null): ProfileSlot {
  if (!doc) return { profile: null, version: 0, foldedInto: null };
  if (doc.erased) return { profile: null, version: doc.version, foldedInto: null };
  if (doc.folded_into) {
    const tombstone = { profile: null, version: doc.version, foldedInto: doc.folded_into };
    return doc.snapshot ? { ...tombstone, snapshot: toProfile(doc) } : tombstone;
  }
  return { profile: toProfile(doc), version: doc.version, foldedInto: null };
}

export function slotDocument(projectId: string, identityKey: string, next: SlotContent, version: number): ProfileDoc {
  if ("profile" in next) return profileDocument({ ...next.profile, version });
  if ("erased" in next) return erasedDocument(projectId, identityKey, version);
  if (next.snapshot)
    return { ...profileDocument({ ...next.snapshot, version }), folded_into: next.foldedInto, snapshot: true };
  return {
    ...profileDocument({
      projectId,
      identityKey,
      partnerUserId: null,
      deviceId: null,
      platformUserId: null,
      tags: [],
      traits: new Map(),
      version,
      firstSeenAt: new Date(0),
      lastSeenAt: new Date(0),
    }),
    folded_into: next.foldedInto,
  };
}

/** The stored shape of a profile (bulk loaders such as the benchmark write exactly this). */
export function profileDocument(profile: ProfileRecord): ProfileDoc {
  return {
    _id: projectScopedId(profile.projectId, profile.identityKey),
    project_id: profile.projectId,
    identity_key: profile.identityKey,
    partner_user_id: profile.partnerUserId,
    device_id: profile.deviceId,
    platform_user_id: profile.platformUserId,
    tags: profile.tags,
    traits: Object.fromEntries(profile.traits),
    version: profile.version,
    first_seen_at: profile.firstSeenAt,
    last_seen_at: profile.lastSeenAt,
    ...(profile.number !== undefined && { n: profile.number }),
    ...(profile.absorbed?.length ? { absorbed: [...profile.absorbed] } : {}),
    ...(profile.requests?.length ? { requests: [...profile.requests] } : {}),
  };
}

export function toProfile(doc: ProfileDoc): ProfileRecord {
  return {
    projectId: doc.project_id,
    identityKey: doc.identity_key,
    partnerUserId: doc.partner_user_id,
    deviceId: doc.device_id,
    platformUserId: doc.platform_user_id,
    tags: doc.tags,
    traits: new Map(Object.entries(doc.traits)),
    version: doc.version,
    firstSeenAt: doc.first_seen_at,
    lastSeenAt: doc.last_seen_at,
    ...(doc.n !== undefined && { number: doc.n }),
    absorbed: doc.absorbed ?? [],
    requests: doc.requests ?? [],
  };
}

/** The marker an erasure leaves under the player's `_id`: nothing of theirs but the key. */
function erasedDocument(projectId: string, identityKey: string, version: number): ProfileDoc {
  const empty = profileDocument({
    projectId,
    identityKey,
    partnerUserId: null,
    deviceId: null,
    platformUserId: null,
    tags: [],
    traits: new Map(),
    version,
    firstSeenAt: new Date(0),
    lastSeenAt: new Date(0),
  });
  return { ...empty, erased: true };
}
