import { ContentionError } from "../errors.js";
import type { RegistryCounterStore } from "./registry-counter-store.js";
import type { TagStore } from "./tag-store.js";
import type { TraitKeyStore } from "./trait-key-store.js";

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
    const knownIds = await this.tagIds(
      projectId,
      needs.flatMap((need) => need.tags),
    );
    const knownKeys = await this.registeredKeys(
      projectId,
      needs.flatMap((need) => need.keys),
    );
    for (let attempt = 0; attempt < MAX_RESERVATIONS; attempt++) {
      const used = await this.stores.counters.read(projectId);
      const plan = planSlots(needs, knownIds, knownKeys, used);
      if (plan.rejected.size > 0) return plan.rejected;
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
    if (keys > 0 && !(await counters.reserveTraitKeySlots(projectId, keys, MAX_TRAIT_KEYS_PER_PROJECT))) {
      await counters.releaseSlots(projectId, tags, 0);
      return null;
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
    const labelOf = (tag: string) => needs.find((need) => need.labels.has(tag))?.labels.get(tag) ?? tag;
    const labelled = plan.tags.map((tag) => ({ tag, label: labelOf(tag) }));
    const insertedTags = await this.stores.tags.insertTags(projectId, firstTagId, labelled, now);
    const insertedKeys = await this.stores.traitKeys.insertTraitKeys(projectId, plan.keys, now);
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
