import type { EntitlementStore } from "../admin/entitlement-store.js";
import type { ProjectStore } from "../admin/project-store.js";
import type { Logger } from "../log.js";
import { KeyedLock } from "../db/keyed-lock.js";
import type { FollowUp, FollowUpStore } from "./follow-up-store.js";
import type { LaunchStore } from "./store.js";

/** What a successful verify tells the players capability, which folds the device's profile into the user's. */
export interface LaunchVerified {
  projectId: string;
  platformUserId: string;
  partnerUserId: string;
  installationId: string;
}

/** Who is told of each successful verify (the players capability). Must be idempotent: a follow-up cut short runs again. */
export interface VerifiedLaunches {
  onLaunchVerified(event: LaunchVerified): Promise<void>;
}

export interface FollowUpsOptions {
  tokens: LaunchStore;
  store: FollowUpStore;
  /** Holds the launch records, per (platform user, game). */
  entitlementStore: EntitlementStore;
  projectStore: ProjectStore;
  log: Logger;
  verifiedLaunches?: VerifiedLaunches;
}

// Follow-ups completed per sweep; the rest wait for the next one.
const SWEEP_BATCH = 500;

/**
 * The writes a valid verify owes after spending its token: the installation
 * becomes the user's (and no longer another user's), the players capability
 * links it and folds its device profile, and the user's launch record
 * remembers it so that the next launch from it needs none of this.
 *
 * A verify records the follow-up before its spend and completes it right
 * after; every step is idempotent, so a follow-up cut short by a failure is
 * completed by `sweep`, once its token shows as spent.
 */
export class FollowUps {
  /** Follow-ups of one installation run one at a time in this process, so the last launch decides its user. */
  private readonly installationLocks = new KeyedLock();

  constructor(private readonly deps: FollowUpsOptions) {}

  record(followUp: FollowUp): Promise<void> {
    return this.deps.store.insertFollowUp(followUp);
  }

  discard(jti: string): Promise<void> {
    return this.deps.store.deleteFollowUp(jti);
  }

  /** Completes a follow-up whose token was just spent; a failure is left to the sweep and never reaches the caller. */
  async completeAfterSpend(followUp: FollowUp): Promise<void> {
    try {
      await this.complete(followUp);
    } catch (error) {
      this.deps.log.warn(
        { err: error, project_id: followUp.projectId },
        "following up a verified launch failed; the sweep completes it",
      );
    }
  }

  /**
   * Completes the follow-ups of spent tokens and drops those whose token
   * expired unspent (their verify failed before its spend). Stops at the
   * first failure; the next sweep goes on.
   */
  async sweep(now: Date): Promise<void> {
    const { tokens, store } = this.deps;
    for (const followUp of await store.listFollowUps(SWEEP_BATCH)) {
      if (!(await tokens.isUnspent(followUp.jti))) await this.complete(followUp);
      else if (followUp.expiresAt < now) await store.deleteFollowUp(followUp.jti);
    }
  }

  private async complete(followUp: FollowUp): Promise<void> {
    const { store, entitlementStore: records, projectStore, verifiedLaunches } = this.deps;
    const { jti, projectId, platformUserId, installationId, partnerUserId } = followUp;
    // The launch record is kept per game; a project's game never changes.
    const gameId = await projectStore.gameOf(projectId);
    await this.installationLocks.run([`${projectId}/${installationId}`], async () => {
      // The previous user forgets the installation before it changes hands, so a retry finds that user again.
      const previousUser = await store.findInstallationUser(projectId, installationId);
      if (previousUser !== platformUserId) {
        if (previousUser !== null) await records.forgetInstallation(previousUser, gameId, installationId);
        await store.setInstallationUser(projectId, installationId, platformUserId);
      }
      await verifiedLaunches?.onLaunchVerified({ projectId, platformUserId, partnerUserId, installationId });
      await records.rememberInstallation(platformUserId, gameId, partnerUserId, installationId);
      await store.deleteFollowUp(jti);
    });
  }
}
