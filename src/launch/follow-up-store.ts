import type { Db } from "mongodb";
import { isDuplicateKey } from "../db/errors.js";
import { projectScopedId } from "../db/ids.js";

/** The writes a valid verify owes after its spend, recorded before it so they survive a failure in between. */
export interface FollowUp {
  jti: string;
  projectId: string;
  platformUserId: string;
  installationId: string;
  partnerUserId: string;
  /** The token's expiry: a follow-up whose token expired unspent is dropped. */
  expiresAt: Date;
}

interface InstallationDoc {
  _id: string;
  /** The platform user who last launched on this installation (as far as followed up). */
  platform_user_id: string;
}

interface FollowUpDoc {
  _id: string;
  project_id: string;
  platform_user_id: string;
  installation_id: string;
  partner_user_id: string;
  expires_at: Date;
}

/**
 * What follow-ups keep apart from the launch records (which are in the
 * entitlement's document, src/admin/entitlement-store.ts): per installation
 * its last user (`launch_installations`), and the follow-ups of verifies still
 * owed (`launch_follow_ups`, by `jti`). Every lookup is by `_id`.
 */
export class FollowUpStore {
  private readonly installations;
  private readonly followUps;

  constructor(db: Db) {
    this.installations = db.collection<InstallationDoc>("launch_installations");
    this.followUps = db.collection<FollowUpDoc>("launch_follow_ups");
  }

  async findInstallationUser(projectId: string, installationId: string): Promise<string | null> {
    const doc = await this.installations.findOne({ _id: projectScopedId(projectId, installationId) });
    return doc?.platform_user_id ?? null;
  }

  async setInstallationUser(projectId: string, installationId: string, platformUserId: string): Promise<void> {
    await this.installations.updateOne(
      { _id: projectScopedId(projectId, installationId) },
      { $set: { platform_user_id: platformUserId } },
      { upsert: true },
    );
  }

  /** Records a follow-up; concurrent verifies of one token record the same one, so an existing record is kept. */
  async insertFollowUp(followUp: FollowUp): Promise<void> {
    try {
      await this.followUps.insertOne({
        _id: followUp.jti,
        project_id: followUp.projectId,
        platform_user_id: followUp.platformUserId,
        installation_id: followUp.installationId,
        partner_user_id: followUp.partnerUserId,
        expires_at: followUp.expiresAt,
      });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  async deleteFollowUp(jti: string): Promise<void> {
    await this.followUps.deleteOne({ _id: jti });
  }

  /** Up to `limit` recorded follow-ups, in no particular order. */
  async listFollowUps(limit: number): Promise<FollowUp[]> {
    const docs = await this.followUps.find().limit(limit).toArray();
    return docs.map((doc) => ({
      jti: doc._id,
      projectId: doc.project_id,
      platformUserId: doc.platform_user_id,
      installationId: doc.installation_id,
      partnerUserId: doc.partner_user_id,
      expiresAt: doc.expires_at,
    }));
  }
}
