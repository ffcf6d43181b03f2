import type { Db, Filter, UpdateFilter } from "mongodb";
import { KeyedLock } from "../db/keyed-lock.js";

export interface EntitlementRecord {
  platformUserId: string;
  gameId: number;
  owns: boolean;
  source: string;
  channelId: string;
  buildVersion: string;
  updatedAt: Date;
}

/** What a verify needs to know of a platform user's launches of a game (its project's, one to one). */
export interface LaunchRecord {
  /** The studio's id for the user, once linked. */
  partnerUserId: string | null;
  /** The partner id the installations below were linked under; a different one means they must be linked again. */
  linkedAs: string | null;
  /** Installations whose launches by this user were followed up (linked, device profile folded). */
  installations: string[];
}

/** Everything kept for one (platform user, game): one document, so a verify reads it in one call. */
export interface UserGameRecord {
  /** Null when the store never reported ownership. */
  entitlement: EntitlementRecord | null;
  launch: LaunchRecord;
}

interface UserGameDoc {
  _id: string;
  platform_user_id: string;
  game_id: number;
  // The entitlement, once the store reported one.
  owns?: boolean;
  source?: string;
  channel_id?: string;
  build_version?: string;
  updated_at?: Date;
  // The launch record, once a launch or a partner link wrote one.
  partner_user_id?: string;
  linked_at?: Date;
  linked_as?: string;
  installations?: string[];
}

// A user's remembered installations start over beyond this many; forgetting one only costs a follow-up.
const MAX_INSTALLATIONS = 100;

/**
 * The `entitlements` collection, `_id` `<platform_user_id>:<game_id>`: the
 * store's record of ownership and, in the same document, the user's launch
 * record for the game's project (partner link, installations followed up).
 * Either part may exist without the other. Admin writes the entitlement's
 * fields and launch the launch record's, each with `$set` of its own; FerretDB
 * loses one of two concurrent updates of a document, so every write to one
 * document runs one at a time in this process.
 */
export class EntitlementStore {
  private readonly docs;
  private readonly locks = new KeyedLock();

  constructor(db: Db) {
    this.docs = db.collection<UserGameDoc>("entitlements");
  }

  /** With `queryIndexes` (src/db/engine.ts), the list by game rides its own index, in the list's order. */
  async createIndexes(queryIndexes: boolean): Promise<void> {
    await this.docs.createIndex({ platform_user_id: 1, game_id: 1 }, { unique: true });
    if (queryIndexes) await this.docs.createIndex({ game_id: 1, platform_user_id: 1 });
  }

  async upsertEntitlement(entitlement: EntitlementRecord): Promise<void> {
    await this.write(entitlement.platformUserId, entitlement.gameId, {
      $set: {
        owns: entitlement.owns,
        source: entitlement.source,
        channel_id: entitlement.channelId,
        build_version: entitlement.buildVersion,
        updated_at: entitlement.updatedAt,
      },
    });
  }

  async findEntitlement(platformUserId: string, gameId: number): Promise<EntitlementRecord | null> {
    return toEntitlement(await this.docs.findOne({ _id: userGameId(platformUserId, gameId) }));
  }

  /** A page of the entitlements (of a user, of a game, or all), by user and game, and how many there are. */
  async listEntitlements(
    of: { platformUserId?: string; gameId?: number },
    skip: number,
    limit: number,
  ): Promise<{ entitlements: EntitlementRecord[]; total: number }> {
    // A document only the launch record wrote holds no entitlement.
    const filter: Filter<UserGameDoc> = { owns: { $exists: true } };
    if (of.platformUserId !== undefined) filter.platform_user_id = of.platformUserId;
    if (of.gameId !== undefined) filter.game_id = of.gameId;
    const [docs, total] = await Promise.all([
      this.docs.find(filter).sort({ platform_user_id: 1, game_id: 1 }).skip(skip).limit(limit).toArray(),
      this.docs.countDocuments(filter),
    ]);
    return { entitlements: docs.flatMap((doc) => toEntitlement(doc) ?? []), total };
  }

  /** The entitlement and the launch record in one read. */
  async findUserGame(platformUserId: string, gameId: number): Promise<UserGameRecord> {
    const doc = await this.docs.findOne({ _id: userGameId(platformUserId, gameId) });
    return {
      entitlement: toEntitlement(doc),
      launch: {
        partnerUserId: doc?.partner_user_id ?? null,
        linkedAs: doc?.linked_as ?? null,
        installations: doc?.installations ?? [],
      },
    };
  }

  async setPartnerLink(platformUserId: string, gameId: number, partnerUserId: string, now: Date): Promise<void> {
    await this.write(platformUserId, gameId, { $set: { partner_user_id: partnerUserId, linked_at: now } });
  }

  /** Remembers that the user's launches on `installationId` were followed up under `partnerUserId`. */
  async rememberInstallation(
    platformUserId: string,
    gameId: number,
    partnerUserId: string,
    installationId: string,
  ): Promise<void> {
    await this.write(platformUserId, gameId, async () => {
      const { launch } = await this.findUserGame(platformUserId, gameId);
      const keep = launch.linkedAs === partnerUserId && launch.installations.length < MAX_INSTALLATIONS;
      return keep
        ? { $addToSet: { installations: installationId } }
        : { $set: { linked_as: partnerUserId, installations: [installationId] } };
    });
  }

  /** Forgets an installation of a user, after another user launched on it. */
  async forgetInstallation(platformUserId: string, gameId: number, installationId: string): Promise<void> {
    await this.write(platformUserId, gameId, { $pull: { installations: installationId } });
  }

  /** Upserts the document under its lock; `update` may be decided from a read made holding it. */
  private async write(
    platformUserId: string,
    gameId: number,
    update: UpdateFilter<UserGameDoc> | (() => Promise<UpdateFilter<UserGameDoc>>),
  ): Promise<void> {
    const _id = userGameId(platformUserId, gameId);
    await this.locks.run([_id], async () => {
      const decided = typeof update === "function" ? await update() : update;
      await this.docs.updateOne(
        { _id },
        { ...decided, $setOnInsert: { platform_user_id: platformUserId, game_id: gameId } },
        { upsert: true },
      );
    });
  }
}

function userGameId(platformUserId: string, gameId: number): string {
  return `${platformUserId}:${gameId}`;
}

/** A document the launch record created has no entitlement yet. */
function toEntitlement(doc: UserGameDoc | null): EntitlementRecord | null {
  if (doc?.owns === undefined) return null;
  // The entitlement's fields are written together.
  const { source, channel_id, build_version, updated_at } = doc as Required<UserGameDoc>;
  return {
    platformUserId: doc.platform_user_id,
    gameId: doc.game_id,
    owns: doc.owns,
    source,
    channelId: channel_id,
    buildVersion: build_version,
    updatedAt: updated_at,
  };
}
