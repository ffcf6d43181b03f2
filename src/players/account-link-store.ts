import type { Db } from "mongodb";
import { projectScopedId } from "../db/ids.js";

interface AccountLinkDoc {
  _id: string;
  project_id: string;
  partner_user_id: string;
  platform_user_id: string;
  linked_at: Date;
}

/** The player_accounts collection: player (`partner_user_id`) → platform user, `_id` `<project>/<partner_user_id>`. */
export class AccountLinkStore {
  private readonly accounts;

  constructor(db: Db) {
    this.accounts = db.collection<AccountLinkDoc>("player_accounts");
  }

  async findPlatformUser(projectId: string, partnerUserId: string): Promise<string | null> {
    const doc = await this.accounts.findOne({ _id: projectScopedId(projectId, partnerUserId) });
    return doc?.platform_user_id ?? null;
  }

  async link(projectId: string, partnerUserId: string, platformUserId: string, now: Date): Promise<void> {
    await this.accounts.updateOne(
      { _id: projectScopedId(projectId, partnerUserId) },
      {
        $set: {
          project_id: projectId,
          partner_user_id: partnerUserId,
          platform_user_id: platformUserId,
          linked_at: now,
        },
      },
      { upsert: true },
    );
  }
}
