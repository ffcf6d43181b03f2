import type { EntitlementStore, LaunchRecord } from "../admin/entitlement-store.js";
import type { ProjectStore } from "../admin/project-store.js";
import type { Clock } from "../clock.js";
import type { PlayerAnswer, PreparedAnswer } from "../config/evaluation.js";
import { fail, NotFoundError, ok, PermissionDeniedError, type Result } from "../errors.js";
import type { Logger } from "../log.js";
import type { FollowUps } from "./follow-ups.js";
import type { Keyring } from "./keyring.js";
import type { FollowUp } from "./follow-up-store.js";
import { pseudonymousPartnerId } from "./pseudonym.js";
import type { SpendsInDoubt } from "./spends-in-doubt.js";
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
  /** The project's in_launch config entries' values for the player now. */
  config: PlayerAnswer["config"];
  /** The player's variant of each running experiment they are eligible for. */
  experiments: PlayerAnswer["experiments"];
}

/** What a valid verify answers about its player beyond the launch: their config and experiments now (Evaluation). */
export interface LaunchAnswers {
  prepare(projectId: string, player: { partnerUserId: string }): Promise<PreparedAnswer>;
}

export type { LaunchVerified } from "./follow-ups.js";

export interface LaunchTokensOptions {
  store: LaunchStore;
  followUps: FollowUps;
  spendsInDoubt: SpendsInDoubt;
  projectStore: ProjectStore;
  entitlementStore: EntitlementStore;
  keyring: Keyring;
  issuer: string;
  ttlSeconds: number;
  clock: Clock;
  answers: LaunchAnswers;
  log: Logger;
}

/** Issuing and verifying launch tokens: the decisions, apart from the transport. */
export class LaunchTokens {
  constructor(private readonly deps: LaunchTokensOptions) {}

  /** Signs a token for a launch of a game the user owns now. */
  async issue(launch: LaunchRequest): Promise<IssuedLaunch> {
    const { store, projectStore, entitlementStore, keyring, issuer, ttlSeconds, clock } = this.deps;
    const [project, entitlement] = await Promise.all([
      projectStore.findProjectByGame(launch.gameId),
      entitlementStore.findEntitlement(launch.platformUserId, launch.gameId),
    ]);
    if (!project) throw new NotFoundError(`game_id: no project has game ${launch.gameId}`);
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
   * Verifies `jwt` for `projectId` (the caller's), spending it on success.
   *
   * The spend is the commit point: what the answer and the follow-up need is
   * read before it (the entitlement and the launch record, one document), so
   * a database failure up to the spend answers an error with the token
   * unspent, and after it nothing turns the spent token into an error. A
   * launch that changes something (a new installation, a changed partner
   * link) records its follow-up before the spend and completes it after; a
   * repeat launch makes two database calls: the read and the spend. The
   * player's config and experiments are read before the spend too (from
   * memory, once compiled and the player's exposures known); their first
   * exposures are recorded after it.
   */
  async verify(jwt: string, projectId: string): Promise<Result<VerifiedLaunch, VerifyError>> {
    const { store, followUps, entitlementStore, keyring, issuer, clock } = this.deps;
    const read = await checkLaunchToken(jwt, keyring, issuer, clock.now());
    if (!read.ok) return fail(read.error);
    const claims = read.value;
    const { jti, sub: platformUserId, aud, installation_id: installationId, game_id: gameId } = claims;
    // Another project's token is unknown to this caller, whatever its state.
    if (aud !== projectId) return fail("unknown_token");

    // Ownership is read now, not at issue: a refund in between shows as owns: false. The token's game is its
    // project's (signed at issue), whose launch records are kept with the entitlement.
    const { entitlement, launch } = await entitlementStore.findUserGame(platformUserId, gameId);
    const partnerUserId = launch.partnerUserId ?? pseudonymousPartnerId(projectId, platformUserId);
    const answer = await this.deps.answers.prepare(projectId, { partnerUserId });
    const expiresAt = new Date(claims.exp * 1000);
    const followUp: FollowUp | null = isFollowedUp(launch, partnerUserId, installationId)
      ? null
      : { jti, projectId, platformUserId, installationId, partnerUserId, expiresAt };
    if (followUp) await followUps.record(followUp);

    if (!(await this.spend(jti, expiresAt))) {
      if (await store.isIssued(jti, projectId)) return fail("already_used");
      // Never spent, so nothing is owed; a concurrent verify of the same token cannot have spent it either.
      if (followUp) await followUps.discard(jti);
      return fail("unknown_token");
    }
    if (followUp) await followUps.completeAfterSpend(followUp);
    const { config, experiments } = await this.recordExposures(answer);
    return ok({
      platformUserId,
      partnerUserId,
      installationId,
      issuedAt: new Date(claims.iat * 1000),
      entitlement: {
        owns: entitlement?.owns ?? false,
        source: entitlement?.source ?? "",
        gameId,
        channelId: claims.channel_id,
        buildVersion: claims.build_version,
      },
      config,
      experiments,
    });
  }

  /** After the spend nothing fails the verify: exposures that could not be recorded are recorded at the next one. */
  private recordExposures(answer: PreparedAnswer): Promise<PlayerAnswer> {
    return answer.record().catch((error: unknown) => {
      this.deps.log.warn(
        { err: error },
        "verify: the player's exposures were not recorded; their next verify records them",
      );
      return answer;
    });
  }

  /** Spends the token; true when this verify may answer valid (its spend, or an earlier one that answered 503). */
  private async spend(jti: string, expiresAt: Date): Promise<boolean> {
    const { store, spendsInDoubt } = this.deps;
    let spent: boolean;
    try {
      spent = await store.spendToken(jti);
    } catch (error) {
      spendsInDoubt.remember(jti, expiresAt);
      throw error;
    }
    if (spent) spendsInDoubt.spent(jti, expiresAt);
    return spent || spendsInDoubt.claim(jti);
  }

  /** Links the studio's id for a platform user in a project; verify answers with it from then on. */
  async link(projectId: string, platformUserId: string, partnerUserId: string): Promise<void> {
    const { projectStore, entitlementStore, clock } = this.deps;
    const gameId = await projectStore.gameOf(projectId);
    await entitlementStore.setPartnerLink(platformUserId, gameId, partnerUserId, clock.now());
  }
}

/** Whether launches of this user on this installation were already followed up under this partner id. */
function isFollowedUp(launch: LaunchRecord, partnerUserId: string, installationId: string): boolean {
  return launch.linkedAs === partnerUserId && launch.installations.includes(installationId);
}
