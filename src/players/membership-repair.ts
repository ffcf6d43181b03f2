import type { Logger } from "../log.js";
import type { PendingWrite } from "./membership-journal-store.js";
import { MEMBERSHIP_LAYOUT, type MembershipChange } from "./membership-store.js";
import type { PlayerStores } from "./stores.js";

export interface RepairOptions {
  stores: PlayerStores;
  now: Date;
  /**
   * Rounds begun less than this long ago may still be running in another
   * process and are left alone; 0 where one process owns the database.
   */
  graceMs: number;
  log?: Logger;
}

/**
 * Makes tag membership and players_count match the profiles: in full when
 * the stored layout is not the current one (a database from before
 * membership, or another bucket count), else for the rounds the journal
 * holds (a crash between a round's profile write and its membership write).
 */
export async function repairMembership(options: RepairOptions): Promise<void> {
  const { stores } = options;
  if ((await stores.membership.storedLayout()) !== MEMBERSHIP_LAYOUT) {
    await rebuildMembership(stores);
    options.log?.info("tag membership rebuilt from profiles");
    return;
  }
  const pending = await stores.journal.pending(new Date(options.now.getTime() - options.graceMs));
  for (const write of pending) await completeJournaled(stores, write);
  if (pending.length > 0) options.log?.info({ rounds: pending.length }, "tag membership repaired after a crash");
}

/**
 * Completes one journaled round: the membership of its players follows their
 * profiles as they are, the counts of its tags are set to the size of their
 * membership, and its journal document goes. Idempotent; the caller keeps
 * other writers of those players and of the project's membership and counts away.
 */
export async function completeJournaled(stores: PlayerStores, write: PendingWrite): Promise<void> {
  const slots = await stores.profiles.readSlots(write.projectId, write.identityKeys);
  const changes: MembershipChange[] = write.tags.map((tag) => ({
    tag,
    added: write.identityKeys.filter((key) => slots.get(key)?.profile?.tags.includes(tag)),
    removed: write.identityKeys.filter((key) => !slots.get(key)?.profile?.tags.includes(tag)),
  }));
  await stores.membership.apply(write.projectId, changes);
  await recount(stores, write.projectId, write.tags);
  await stores.journal.end(write.id);
}

/** Sets players_count of `tags` to the size of their membership. */
async function recount(stores: PlayerStores, projectId: string, tags: readonly string[]): Promise<void> {
  const ids = [...(await stores.tags.findIds(projectId, tags))];
  const buckets = await stores.membership.read(
    projectId,
    ids.map(([tag]) => tag),
  );
  const sizes = ids.map(([, id], i) => [id, buckets[i].reduce((n, members) => n + members.length, 0)] as const);
  await stores.tagStats.setCounts(projectId, new Map(sizes));
}

/** Re-derives every membership and count from the profiles, in one pass over them. */
export async function rebuildMembership(stores: PlayerStores): Promise<void> {
  const projects = await membersByProject(stores.profiles.allTags());
  await stores.membership.dropAll();
  for (const [projectId, byTag] of projects) {
    const registered = await stores.tags.listAll(projectId);
    for (const [tag, members] of byTag) await stores.membership.replace(projectId, tag, members);
    await stores.tagStats.setCounts(projectId, new Map(registered.map((t) => [t.id, byTag.get(t.tag)?.length ?? 0])));
  }
  await stores.journal.endAll();
  await stores.membership.saveLayout();
}

/** Per project and tag, the identity keys carrying it, in the order the profiles come. */
export async function membersByProject(
  profiles: AsyncIterable<{ projectId: string; identityKey: string; tags: readonly string[] }>,
): Promise<Map<string, Map<string, string[]>>> {
  const projects = new Map<string, Map<string, string[]>>();
  for await (const { projectId, identityKey, tags } of profiles) {
    let byTag = projects.get(projectId);
    if (!byTag) projects.set(projectId, (byTag = new Map()));
    for (const tag of tags) {
      const members = byTag.get(tag);
      if (members) members.push(identityKey);
      else byTag.set(tag, [identityKey]);
    }
  }
  return projects;
}
