import { createHash } from "node:crypto";

/**
 * The partner_user_id a verify answers with until the studio links its own:
 * stable for one user in one project, different between projects, so two
 * studios cannot match users by it.
 */
export function pseudonymousPartnerId(projectId: string, platformUserId: string): string {
  const digest = createHash("sha256").update(`${projectId}\n${platformUserId}`).digest("base64url");
  return `pp_${digest.slice(0, 22)}`;
}
