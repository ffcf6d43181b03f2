import type { Db } from "mongodb";

export interface EntitlementRecord {
  platformUserId: string;
  gameId: number;
  owns: boolean;
  source: string;
  channelId: string;
  buildVersion: string;
  updatedAt: Date;
}

interface EntitlementDoc {
  _id: string;
  platform_user_id: string;
  game_id: number;
  owns: boolean;
  source: string;
  channel_id: string;
  build_version: string;
  updated_at: Date;
}

/** The `entitlements` collection: the store's record of ownership, `_id` `<platform_user_id>:<game_id>`. */
export class EntitlementStore {
  private readonly entitlements;

  constructor(db: Db) {
    this.entitlements = db.collection<EntitlementDoc>("entitlements");
  }

  async createIndexes(): Promise<void> {
    await this.entitlements.createIndex({ platform_user_id: 1, game_id: 1 }, { unique: true });
  }

  async upsertEntitlement(entitlement: EntitlementRecord): Promise<void> {
    await this.entitlements.updateOne(
      { _id: `${entitlement.platformUserId}:${entitlement.gameId}` },
      {
        $set: {
          platform_user_id: entitlement.platformUserId,
          game_id: entitlement.gameId,
          owns: entitlement.owns,
          source: entitlement.source,
          channel_id: entitlement.channelId,
          build_version: entitlement.buildVersion,
          updated_at: entitlement.updatedAt,
        },
      },
      { upsert: true },
    );
  }
  async findEntitlement(platformUserId: string, gameId: number): Promise<EntitlementRecord | null> {
    const doc = await this.entitlements.findOne({ _id: `${platformUserId}:${gameId}` });
    return (
      doc && {
        platformUserId: doc.platform_user_id,
        gameId: doc.game_id,
        owns: doc.owns,
        source: doc.source,
        channelId: doc.channel_id,
        buildVersion: doc.build_version,
        updatedAt: doc.updated_at,
      }
    );
  }
}
