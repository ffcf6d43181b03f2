import type { KeyedLock } from "../../db/keyed-lock.js";
import { countDeltas, membershipChanges, type TagMove } from "../rules/membership.js";
import type { Registration } from "../rounds/registration.js";
import { membersLock, statsLock } from "../rounds/round-locks.js";
import type { PlayerStores } from "../storage/stores.js";

export interface MembershipWriterOptions {
  stores: PlayerStores;
  registration: Registration;
  locks: KeyedLock;
}

/** A round's tag moves written after its commit point: membership and counts. */
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
    const docLocks = stores.membership.bucketIds(projectId, changes).map(membersLock);
    const idDeltas = new Map([...deltas].flatMap(([tag, d]) => (ids.has(tag) ? [[ids.get(tag)!, d] as const] : [])));
    // Under both locks together, so a completion's recount never falls between.
    await locks.run([...docLocks, statsLock(projectId)], () =>
      stores.membership.apply(projectId, changes, { deltas: idDeltas, given: byId(given), now }),
    );
  }
}
