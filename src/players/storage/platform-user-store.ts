import type { Db } from "mongodb";
import { projectScopedId } from "../../db/ids.js";

interface PlatformUserDoc {
  _id: string;
  project_id: string;
  platform_user_id: string;
  partner_user_id: string;
}

/**
 * The player_platform_users collection: platform user → the partner id its
 * last verified launch named, `_id` `<project>/<platform_user_id>`. When a
 * verify names another partner id (the studio linked one after a
 * pseudonymous start), the old id's profile is folded into the new one's.
 */
export class PlatformUserStore {
  private readonly users;

  constructor(db: Db) {
    this.users = db.collection<PlatformUserDoc>("player_platform_users");
  }

  async findPartner(projectId: string, platformUserId: string): Promise<string | null> {
    return (await this.users.findOne({ _id: projectScopedId(projectId, platformUserId) }))?.partner_user_id ?? null;
  }

  /** Forgets the platform user's partner id if it is still `partnerUserId` (an erasure of that player). */
  async forgetPartner(projectId: string, platformUserId: string, partnerUserId: string): Promise<void> {
    await this.users.deleteOne({ _id: projectScopedId(projectId, platformUserId), partner_user_id: partnerUserId });
  }

  async setPartner(projectId: string, platformUserId: string, partnerUserId: string): Promise<void> {
    await this.users.updateOne(
      { _id: projectScopedId(projectId, platformUserId) },
      { $set: { project_id: projectId, platform_user_id: platformUserId, partner_user_id: partnerUserId } },
      { upsert: true },
    );
  }
}
