import { ContentionError } from "../../errors.js";
import type { RegistryCounterStore } from "../storage/registry-counter-store.js";
import type { TagStore } from "../storage/tag-store.js";
import type { TraitKeyStore } from "../storage/trait-key-store.js";

export const MAX_TAGS_PER_PROJECT = 500;
export const MAX_TRAIT_KEYS_PER_PROJECT = 200;
/** Reservations lost to writers in other processes before a call gives up. */
const MAX_RESERVATIONS = 10;

export type ProjectLimitCode = "project_tag_limit" | "project_trait_limit";

export interface RegistrationStores {
  tags: TagStore;
  traitKeys: TraitKeyStore;
  counters: RegistryCounterStore;
}

/** What one entry of a call would carry that its player did not: names the project may not have yet. */
export interface RegistrationNeed {
  index: number;
  tags: readonly string[];
  keys: readonly string[];
  /** The raw form of each tag: the label of a tag new to the project. */
  labels: ReadonlyMap<string, string>;
}

/**
 * Registration of tags and trait keys new to a project, within its limits,
 * once per call. Slots are taken with one guarded `$inc` on the project's
 * counter (atomic on MongoDB; the caller serialises registrations of one
 * project in this process), so two writers can never both take the 500th
 * tag. A tag or key keeps its slot once registered, even when no player
 * carries it any more: its record (id, label, category) lives on.
 */
export class Registration {
  /** Registered tag ids and trait keys, per project; registrations are never removed, so this stays true. */
  private readonly knownTags = new Map<string, Map<string, number>>();
  private readonly knownKeys = new Map<string, Set<string>>();

  constructor(private readonly stores: RegistrationStores) {}

  /** Learns the registered tags of the project's one-document list (a start): writes then read no tag record of them. */
  async learnTags(projectId: string): Promise<void> {
    const known = knownTagsIn(this.knownTags, projectId);
    for (const { tag, id } of (await this.stores.tags.listed(projectId)) ?? []) known.set(tag, id);
  }

  /** The ids of registered tags among `tags` (read by `_id` where not known yet). */
  async tagIds(projectId: string, tags: readonly string[]): Promise<Map<string, number>> {
    const known = knownTagsIn(this.knownTags, projectId);
    const unknown = [...new Set(tags)].filter((tag) => !known.has(tag));
    if (unknown.length > 0)
      for (const [tag, id] of await this.stores.tags.findIds(projectId, unknown)) known.set(tag, id);
    return new Map(tags.flatMap((tag) => (known.has(tag) ? [[tag, known.get(tag)!] as const] : [])));
  }

  /**
   * Registers every name `needs` lack, in entry order, unless an entry would
   * break a project limit: then nothing is registered and the answer names
   * the entries to reject (the caller decides again without them and asks again).
   */
  async register(
    projectId: string,
    needs: readonly RegistrationNeed[],
    now: Date,
  ): Promise<Map<number, ProjectLimitCode>> {
    const tags = needs.flatMap((need) => need.tags);
    const keys = needs.flatMap((need) => need.keys);
    // Names this process knows are registered take no slot and cannot break a limit: nothing to read or write.
    const cachedTags = knownTagsIn(this.knownTags, projectId);
    const cachedKeys = knownKeysIn(this.knownKeys, projectId);
    if (tags.every((tag) => cachedTags.has(tag)) && keys.every((key) => cachedKeys.has(key))) return new Map();
    // The registry's records and its counter, read side by side: one round trip before the reservation.
    const [knownIds, knownKeys, firstRead] = await Promise.all([
      this.tagIds(projectId, tags),
      this.registeredKeys(projectId, keys),
      this.stores.counters.read(projectId),
    ]);
    for (let attempt = 0; attempt < MAX_RESERVATIONS; attempt++) {
      const used = attempt === 0 ? firstRead : await this.stores.counters.read(projectId);
      const plan = planSlots(needs, knownIds, knownKeys, used);
      if (plan.rejected.size > 0) return plan.rejected;
      if (plan.tags.length === 0 && plan.keys.length === 0) return new Map();
      const reserved = await this.reserve(projectId, plan.tags.length, plan.keys.length);
      if (reserved === null) continue;
      await this.insert(projectId, reserved, plan, needs, now);
      return new Map();
    }
    throw new ContentionError("too many concurrent registrations in one project; retry");
  }

  private async registeredKeys(projectId: string, keys: readonly string[]): Promise<Set<string>> {
    const known = knownKeysIn(this.knownKeys, projectId);
    const unknown = [...new Set(keys)].filter((key) => !known.has(key));
    if (unknown.length > 0)
      for (const key of await this.stores.traitKeys.findRegistered(projectId, unknown)) known.add(key);
    return known;
  }

  /** The first fresh tag id, or null when another process took the slots first. */
  private async reserve(projectId: string, tags: number, keys: number): Promise<number | null> {
    const { counters } = this.stores;
    let firstTagId = 0;
    if (tags > 0) {
      const first = await counters.reserveTagSlots(projectId, tags, MAX_TAGS_PER_PROJECT);
      if (first === null) return null;
      firstTagId = first;
    }
    if (keys > 0) {
      const reservedKeys = await counters
        .reserveTraitKeySlots(projectId, keys, MAX_TRAIT_KEYS_PER_PROJECT)
        .catch(async (error: unknown) => {
          await counters.releaseSlots(projectId, tags, 0).catch(() => undefined);
          throw error;
        });
      if (!reservedKeys) {
        await counters.releaseSlots(projectId, tags, 0);
        return null;
      }
    }
    return firstTagId;
  }

  private async insert(
    projectId: string,
    firstTagId: number,
    plan: SlotPlan,
    needs: readonly RegistrationNeed[],
    now: Date,
  ) {
    // The first entry that gives the tag: an entry's labels also hold the raw forms it removes.
    const labelOf = (tag: string) => needs.find((need) => need.tags.includes(tag))?.labels.get(tag) ?? tag;
    const labelled = plan.tags.map((tag) => ({ tag, label: labelOf(tag) }));
    let insertedTags: string[];
    let insertedKeys: string[];
    try {
      // Side by side, and both settled before a failure gives back the slots of what has no record.
      [insertedTags, insertedKeys] = settledOrThrow(
        await Promise.allSettled([
          this.stores.tags.insertTags(projectId, firstTagId, labelled, now),
          this.stores.traitKeys.insertTraitKeys(projectId, plan.keys, now),
        ]),
      );
    } catch (error) {
      // Best effort (the database may be gone): the start-up repair sets the counters right otherwise.
      await this.releaseUnwritten(projectId, plan).catch(() => undefined);
      throw error;
    }
    // Another process registered some of them first: give back the slots taken twice.
    await this.stores.counters.releaseSlots(
      projectId,
      plan.tags.length - insertedTags.length,
      plan.keys.length - insertedKeys.length,
    );
    // A tag inserted by another process meanwhile has that process's id: read it, don't guess it.
    const known = knownTagsIn(this.knownTags, projectId);
    insertedTags.forEach((tag) => known.set(tag, firstTagId + plan.tags.indexOf(tag)));
    await this.tagIds(projectId, plan.tags);
    for (const key of plan.keys) knownKeysIn(this.knownKeys, projectId).add(key);
  }

  /** After a failed insert, gives back the slots of the planned names that have no record. */
  private async releaseUnwritten(projectId: string, plan: SlotPlan): Promise<void> {
    const { tags, traitKeys, counters } = this.stores;
    const [writtenTags, writtenKeys] = await Promise.all([
      tags.findIds(projectId, plan.tags),
      traitKeys.findRegistered(projectId, plan.keys),
    ]);
    await counters.releaseSlots(projectId, plan.tags.length - writtenTags.size, plan.keys.length - writtenKeys.size);
  }
}

interface SlotPlan {
  tags: string[];
  keys: string[];
  rejected: Map<number, ProjectLimitCode>;
}

/** Walks the needs in entry order: each entry's new names fit in what is left of the limits, or it is rejected whole. */
function planSlots(
  needs: readonly RegistrationNeed[],
  knownTags: ReadonlyMap<string, number>,
  knownKeys: ReadonlySet<string>,
  used: { tags: number; traitKeys: number },
): SlotPlan {
  const plan: SlotPlan = { tags: [], keys: [], rejected: new Map() };
  for (const need of needs) {
    const tags = [...new Set(need.tags)].filter((tag) => !knownTags.has(tag) && !plan.tags.includes(tag));
    const keys = [...new Set(need.keys)].filter((key) => !knownKeys.has(key) && !plan.keys.includes(key));
    if (used.tags + plan.tags.length + tags.length > MAX_TAGS_PER_PROJECT) {
      plan.rejected.set(need.index, "project_tag_limit");
    } else if (used.traitKeys + plan.keys.length + keys.length > MAX_TRAIT_KEYS_PER_PROJECT) {
      plan.rejected.set(need.index, "project_trait_limit");
    } else {
      plan.tags.push(...tags);
      plan.keys.push(...keys);
    }
  }
  return plan;
}

/** The values of settled promises, or the first failure thrown. */
function settledOrThrow<A, B>([a, b]: [PromiseSettledResult<A>, PromiseSettledResult<B>]): [A, B] {
  if (a.status === "rejected") throw a.reason;
  if (b.status === "rejected") throw b.reason;
  return [a.value, b.value];
}

function knownTagsIn(cache: Map<string, Map<string, number>>, projectId: string): Map<string, number> {
  let known = cache.get(projectId);
  if (!known) cache.set(projectId, (known = new Map()));
  return known;
}

function knownKeysIn(cache: Map<string, Set<string>>, projectId: string): Set<string> {
  let known = cache.get(projectId);
  if (!known) cache.set(projectId, (known = new Set()));
  return known;
}
