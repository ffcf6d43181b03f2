import type { AdminStore } from "../admin/store.js";
import type { Logger } from "../log.js";
import type { Keyring } from "./keyring.js";
import { pseudonymousPartnerId } from "./pseudonym.js";
import type { LaunchStore } from "./store.js";
import { newTokenId, checkLaunchToken, signLaunchToken } from "./tokens.js";

export interface LaunchRequest {
  platformUserId: string;
  installationId: string;
  gameId: number;
  channelId: string;
  buildVersion: string;
}

export type IssueOutcome =
  { ok: true; token: string; expiresAt: Date } | { ok: false; reason: "unknown_game" | "not_owned" };

export type VerifyError = "expired" | "invalid_token" | "unknown_token" | "already_used";

export type VerifyOutcome =
  | {
      valid: true;
      platformUserId: string;
      partnerUserId: string;
      installationId: string;
      issuedAt: Date;
      entitlement: { owns: boolean; source: string; gameId: number; channelId: string; buildVersion: string };
    }
  | { valid: false; error: VerifyError };

/** What a successful verify tells the players capability, which folds the device's profile into the user's. */
export interface LaunchVerified {
  projectId: string;
  platformUserId: string;
  partnerUserId: string;
  installationId: string;
}

export interface LaunchTokensDeps {
  store: LaunchStore;
  adminStore: AdminStore;
  keyring: Keyring;
  issuer: string;
  ttlSeconds: number;
  now: () => Date;
  log: Logger;
  onLaunchVerified?: (event: LaunchVerified) => Promise<void>;
}

/** Issuing and verifying launch tokens: the decisions, apart from the transport. */
export class LaunchTokens {
  constructor(private readonly deps: LaunchTokensDeps) {}

  async issue(launch: LaunchRequest): Promise<IssueOutcome> {
    const { store, adminStore, keyring, issuer, ttlSeconds, now } = this.deps;
    const project = await adminStore.findProjectByGame(launch.gameId);
    if (!project) return { ok: false, reason: "unknown_game" };
    const entitlement = await adminStore.findEntitlement(launch.platformUserId, launch.gameId);
    if (!entitlement?.owns) return { ok: false, reason: "not_owned" };

    const iat = Math.floor(now().getTime() / 1000);
    const exp = iat + ttlSeconds;
    const jti = newTokenId();
    const expiresAt = new Date(exp * 1000);
    await store.insertToken({ jti, projectId: project.projectId, issuedAt: new Date(iat * 1000), expiresAt });
    const jwt = await signLaunchToken(
      {
        jti,
        sub: launch.platformUserId,
        aud: project.projectId,
        iat,
        exp,
        installation_id: launch.installationId,
        game_id: launch.gameId,
        channel_id: launch.channelId,
        build_version: launch.buildVersion,
      },
      keyring,
      issuer,
    );
    return { ok: true, token: jwt, expiresAt };
  }

  /**
   * Verifies `jwt` for `projectId` (the caller's), spending it on success. The
   * claims are ours (the signature says so), so a valid verify reads no token
   * document: it spends the token, then reads the link and the entitlement.
   */
  async verify(jwt: string, projectId: string): Promise<VerifyOutcome> {
    const { store, adminStore, keyring, issuer, now } = this.deps;
    const read = await checkLaunchToken(jwt, keyring, issuer, now());
    if (!read.ok) return { valid: false, error: read.error };
    const { jti, sub: platformUserId, aud, iat, installation_id: installationId, game_id: gameId } = read.claims;
    // Another project's token is unknown to this caller, whatever its state.
    if (aud !== projectId) return { valid: false, error: "unknown_token" };
    if (!(await store.spendToken(jti))) {
      return { valid: false, error: (await store.isIssued(jti, projectId)) ? "already_used" : "unknown_token" };
    }

    // Ownership is read now, not at issue: a refund in between shows as owns: false.
    const [linkedPartnerId, entitlement] = await Promise.all([
      store.findPartnerLink(projectId, platformUserId),
      adminStore.findEntitlement(platformUserId, gameId),
    ]);
    const partnerUserId = linkedPartnerId ?? pseudonymousPartnerId(projectId, platformUserId);
    await this.notifyVerified({ projectId, platformUserId, partnerUserId, installationId });
    return {
      valid: true,
      platformUserId,
      partnerUserId,
      installationId,
      issuedAt: new Date(iat * 1000),
      entitlement: {
        owns: entitlement?.owns ?? false,
        source: entitlement?.source ?? "",
        gameId,
        channelId: read.claims.channel_id,
        buildVersion: read.claims.build_version,
      },
    };
  }

  /** Links the studio's id for a platform user in a project; verify answers with it from then on. */
  async link(projectId: string, platformUserId: string, partnerUserId: string): Promise<void> {
    await this.deps.store.setPartnerLink(projectId, platformUserId, partnerUserId, this.deps.now());
  }

  /** The token is already spent: a failure to fold the device profile must not turn the answer into an error. */
  private async notifyVerified(event: LaunchVerified): Promise<void> {
    try {
      await this.deps.onLaunchVerified?.(event);
    } catch (error) {
      this.deps.log.error(
        { err: error, project_id: event.projectId },
        "folding the device profile after a verify failed",
      );
    }
  }
}
