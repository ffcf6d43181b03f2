import type { Db } from "mongodb";
import { isDuplicateKey } from "../db/errors.js";
import { projectScopedId } from "../db/ids.js";
import { KeyedLock } from "../players/keyed-lock.js";

/** What a verify needs to know about a platform user in a project, in one document. */
export interface LaunchUser {
  /** The studio's id for the user, once linked. */
  partnerUserId: string | null;
  /** The partner id the installations below were linked under; a different one means they must be linked again. */
  linkedAs: string | null;
  /** Installations whose launches by this user were followed up (linked, device profile folded). */
  installations: string[];
}

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

interface LaunchUserDoc {
  _id: string;
  project_id: string;
  platform_user_id: string;
  partner_user_id?: string;
  linked_at?: Date;
  linked_as?: string;
  installations?: string[];
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

// A user's remembered installations start over beyond this many; forgetting one only costs a follow-up.
const MAX_INSTALLATIONS = 100;

/**
 * Launch records: per (project, platform user) the partner link and the
 * installations already linked (`launch_users`), per installation its last
 * user (`launch_installations`), and the follow-ups of verifies still owed
 * (`launch_follow_ups`, by `jti`). Every lookup is by `_id`. A launch user is
 * written by the partner link and by follow-ups; FerretDB loses one of two
 * concurrent updates of a document, so those writes run one at a time here.
 */
export class LaunchUserStore {
  private readonly users;
  private readonly installations;
  private readonly followUps;
  private readonly userLocks = new KeyedLock();

  constructor(private readonly db: Db) {
    this.users = db.collection<LaunchUserDoc>("launch_users");
    this.installations = db.collection<InstallationDoc>("launch_installations");
    this.followUps = db.collection<FollowUpDoc>("launch_follow_ups");
  }

  /** Moves the links of `partner_links` (before launch records) into `launch_users`, once. */
  async migratePartnerLinks(): Promise<void> {
    // Checked by name: mongo-java-server answers listCollections with every collection, ignoring the filter.
    const found = await this.db.listCollections({ name: "partner_links" }, { nameOnly: true }).toArray();
    if (!found.some((collection) => collection.name === "partner_links")) return;
    const links = this.db.collection<LaunchUserDoc>("partner_links");
    for await (const link of links.find()) {
      await this.users.updateOne(
        { _id: link._id },
        {
          $set: { partner_user_id: link.partner_user_id, linked_at: link.linked_at },
          $setOnInsert: { project_id: link.project_id, platform_user_id: link.platform_user_id },
        },
        { upsert: true },
      );
    }
    await links.drop();
  }

  async findLaunchUser(projectId: string, platformUserId: string): Promise<LaunchUser | null> {
    const doc = await this.users.findOne({ _id: projectScopedId(projectId, platformUserId) });
    return (
      doc && {
        partnerUserId: doc.partner_user_id ?? null,
        linkedAs: doc.linked_as ?? null,
        installations: doc.installations ?? [],
      }
    );
  }

  async setPartnerLink(projectId: string, platformUserId: string, partnerUserId: string, now: Date): Promise<void> {
    await this.writeUser(projectId, platformUserId, {
      $set: { partner_user_id: partnerUserId, linked_at: now },
    });
  }

  /** Remembers that the user's launches on `installationId` were followed up under `partnerUserId`. */
  async rememberInstallation(
    projectId: string,
    platformUserId: string,
    partnerUserId: string,
    installationId: string,
  ): Promise<void> {
    const _id = projectScopedId(projectId, platformUserId);
    await this.userLocks.run([_id], async () => {
      const user = await this.findLaunchUser(projectId, platformUserId);
      const keep = user?.linkedAs === partnerUserId && user.installations.length < MAX_INSTALLATIONS;
      await this.users.updateOne(
        { _id },
        {
          ...(keep
            ? { $addToSet: { installations: installationId } }
            : { $set: { linked_as: partnerUserId, installations: [installationId] } }),
          $setOnInsert: { project_id: projectId, platform_user_id: platformUserId },
        },
        { upsert: true },
      );
    });
  }

  /** Forgets an installation of a user, after another user launched on it. */
  async forgetInstallation(projectId: string, platformUserId: string, installationId: string): Promise<void> {
    await this.writeUser(projectId, platformUserId, { $pull: { installations: installationId } });
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

  private async writeUser(
    projectId: string,
    platformUserId: string,
    update: { $set?: Partial<LaunchUserDoc>; $pull?: { installations: string } },
  ): Promise<void> {
    const _id = projectScopedId(projectId, platformUserId);
    await this.userLocks.run([_id], () =>
      this.users.updateOne(
        { _id },
        { ...update, $setOnInsert: { project_id: projectId, platform_user_id: platformUserId } },
        { upsert: true },
      ),
    );
  }
}
