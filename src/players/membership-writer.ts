import type { KeyedLock } from "../db/keyed-lock.js";
import { countDeltas, membershipChanges, movesAnyTag, type TagMove } from "./membership.js";
import type { ProfileSlot } from "./profile-store.js";
import type { Registration } from "./registration.js";
import { membersLock, statsLock } from "./round-locks.js";
import type { PlayerStores } from "./stores.js";

export interface MembershipWriterOptions {
  stores: PlayerStores;
  registration: Registration;
  locks: KeyedLock;
}

/** A round's tag moves written after its commit point: membership and counts, settled when instances share a database. */
export class MembershipWriter {
  constructor(private readonly options: MembershipWriterOptions) {}

  /**
   * Membership and the tag counts of `moves`, and the last-given time of the
   * `given` tags, in one write (the owner: in its memory, written behind).
   */
  async write(projectId: string, moves: readonly TagMove[], given: ReadonlySet<string>, now: Date): Promise<void> {
    const { stores, locks, registration } = this.options;
    const changes = membershipChanges(moves);
    const deltas = countDeltas(changes);
    const ids = await registration.tagIds(projectId, [...new Set([...deltas.keys(), ...given])]);
    const byId = (tags: Iterable<string>) => [...tags].filter((tag) => ids.has(tag)).map((tag) => ids.get(tag)!);
    const docLocks = stores.membership.documentIds(projectId, changes).map(membersLock);
    const idDeltas = new Map([...deltas].flatMap(([tag, d]) => (ids.has(tag) ? [[ids.get(tag)!, d] as const] : [])));
    // Under both locks together, so a completion's recount never falls between.
    await locks.run([...docLocks, statsLock(projectId)], () =>
      stores.membership.apply(projectId, changes, { deltas: idDeltas, given: byId(given), now }),
    );
  }

  /**
   * Two instances' rounds on one player write their membership in either
   * order. Each round re-reads the profiles whose tags it moved; where another
   * round wrote since (the version is not one above the one `writes` read), it
   * re-derives the tags it moved from the profile as it is now, so the last
   * membership write for a player follows its last profile. (Counts need
   * none of this: each moves by its own round's delta.)
   */
  async settle(
    projectId: string,
    moves: readonly TagMove[],
    writes: readonly { identityKey: string; read: ProfileSlot }[],
  ) {
    const { stores, locks } = this.options;
    // A round that moved none of a player's tags wrote none of its membership: nothing of it to settle.
    const moving = moves.filter(movesAnyTag);
    if (moving.length === 0) return;
    const writtenVersions = new Map(writes.map((w) => [w.identityKey, w.read.version + 1]));
    const now = await stores.profiles.readSlots(
      projectId,
      moving.map((move) => move.identityKey),
    );
    const stale = moving.filter((move) => now.get(move.identityKey)?.version !== writtenVersions.get(move.identityKey));
    if (stale.length === 0) return;
    const changes = membershipChanges(
      stale.map(({ identityKey, before, after }) => {
        const current = now.get(identityKey)?.profile?.tags ?? [];
        const moved = [...new Set([...before, ...after])];
        return {
          identityKey,
          before: moved.filter((tag) => !current.includes(tag)),
          after: moved.filter((tag) => current.includes(tag)),
        };
      }),
    );
    // Each moved tag is added where the profile carries it now and removed where it does not: idempotent writes.
    const docLocks = stores.membership.documentIds(projectId, changes).map(membersLock);
    await locks.run(docLocks, () => stores.membership.apply(projectId, changes));
  }
}
