import type { AdminStore } from "../admin/store.js";
import type { Clock } from "../clock.js";
import { NotFoundError, PermissionDeniedError } from "../errors.js";
import type { Logger } from "../log.js";
import { fail, ok, type Result } from "../result.js";
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

export interface IssuedLaunch {
  token: string;
  expiresAt: Date;
}

export type VerifyError = "expired" | "invalid_token" | "unknown_token" | "already_used";

export interface VerifiedLaunch {
  platformUserId: string;
  partnerUserId: string;
  installationId: string;
  issuedAt: Date;
  entitlement: { owns: boolean; source: string; gameId: number; channelId: string; buildVersion: string };
}

/** What a successful verify tells the players capability, which folds the device's profile into the user's. */
export interface LaunchVerified {
  projectId: string;
  platformUserId: string;
  partnerUserId: string;
  installationId: string;
}

export interface LaunchTokensOptions {
  store: LaunchStore;
  adminStore: AdminStore;
  keyring: Keyring;
  issuer: string;
  ttlSeconds: number;
  clock: Clock;
  log: Logger;
  onLaunchVerified?: (event: LaunchVerified) => Promise<void>;
}

/** Issuing and verifying launch tokens: the decisions, apart from the transport. */
export class LaunchTokens {
  constructor(private readonly deps: LaunchTokensOptions) {}

  /** Signs a token for a launch of a game the user owns now. */
  async issue(launch: LaunchRequest): Promise<IssuedLaunch> {
    const { store, adminStore, keyring, issuer, ttlSeconds, clock } = this.deps;
    const project = await adminStore.findProjectByGame(launch.gameId);
    if (!project) throw new NotFoundError(`game_id: no project has game ${launch.gameId}`);
    const entitlement = await adminStore.findEntitlement(launch.platformUserId, launch.gameId);
    if (!entitlement?.owns) throw new PermissionDeniedError(`platform user does not own game ${launch.gameId}`);

    const iat = Math.floor(clock.now().getTime() / 1000);
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
    return { token: jwt, expiresAt };
  }

  /**
   * Verifies `jwt` for `projectId` (the caller's), spending it on success. The
   * claims are ours (the signature says so), so a valid verify reads no token
   * document: it spends the token, then reads the link and the entitlement.
   */
  async verify(jwt: string, projectId: string): Promise<Result<VerifiedLaunch, VerifyError>> {
    const { store, adminStore, keyring, issuer, clock } = this.deps;
    const read = await checkLaunchToken(jwt, keyring, issuer, clock.now());
    if (!read.ok) return fail(read.error);
    const { jti, sub: platformUserId, aud, iat, installation_id: installationId, game_id: gameId } = read.value;
    // Another project's token is unknown to this caller, whatever its state.
    if (aud !== projectId) return fail("unknown_token");
    if (!(await store.spendToken(jti))) {
      return fail((await store.isIssued(jti, projectId)) ? "already_used" : "unknown_token");
    }

    // Ownership is read now, not at issue: a refund in between shows as owns: false.
    const [linkedPartnerId, entitlement] = await Promise.all([
      store.findPartnerLink(projectId, platformUserId),
      adminStore.findEntitlement(platformUserId, gameId),
    ]);
    const partnerUserId = linkedPartnerId ?? pseudonymousPartnerId(projectId, platformUserId);
    await this.notifyVerified({ projectId, platformUserId, partnerUserId, installationId });
    return ok({
      platformUserId,
      partnerUserId,
      installationId,
      issuedAt: new Date(iat * 1000),
      entitlement: {
        owns: entitlement?.owns ?? false,
        source: entitlement?.source ?? "",
        gameId,
        channelId: read.value.channel_id,
        buildVersion: read.value.build_version,
      },
    });
  }

  /** Links the studio's id for a platform user in a project; verify answers with it from then on. */
  async link(projectId: string, platformUserId: string, partnerUserId: string): Promise<void> {
    await this.deps.store.setPartnerLink(projectId, platformUserId, partnerUserId, this.deps.clock.now());
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
