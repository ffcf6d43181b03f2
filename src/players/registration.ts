import { fail, ok, type Result } from "../result.js";
import type { RegistryCounterStore } from "./registry-counter-store.js";
import type { TagStore } from "./tag-store.js";
import type { TraitKeyStore } from "./trait-key-store.js";

export const MAX_TAGS_PER_PROJECT = 500;
export const MAX_TRAIT_KEYS_PER_PROJECT = 200;

export type ProjectLimitCode = "project_tag_limit" | "project_trait_limit";

export interface RegistrationStores {
  tags: TagStore;
  traitKeys: TraitKeyStore;
  counters: RegistryCounterStore;
}

/**
 * Registration of tags and trait keys new to a project, within its limits.
 * The slots are taken first with a guarded `$inc` on the project's counter
 * (atomic on MongoDB; the caller serialises registrations of one project in
 * this process), so two writers can never both take the 500th tag. A tag or
 * key keeps its slot once registered, even when no player carries it any
 * more: its record (id, label, category) lives on, and only a studio could
 * decide to retire it.
 */
export class Registration {
  /**
   * Tags and trait keys known to be registered, per project. Registrations are
   * never removed, so what is in here stays true; it saves the registry lookups
   * of most entries.
   */
  private readonly knownTags = new Map<string, Set<string>>();
  private readonly knownKeys = new Map<string, Set<string>>();

  constructor(private readonly stores: RegistrationStores) {}

  async register(
    projectId: string,
    tags: readonly string[],
    keys: readonly string[],
    labels: ReadonlyMap<string, string>,
    now: Date,
  ): Promise<Result<void, ProjectLimitCode>> {
    const { tags: tagStore, traitKeys, counters } = this.stores;
    const missingTags = await missing(knownIn(this.knownTags, projectId), tags, (t) =>
      tagStore.findRegistered(projectId, t),
    );
    const missingKeys = await missing(knownIn(this.knownKeys, projectId), keys, (k) =>
      traitKeys.findRegistered(projectId, k),
    );

    let firstTagId = 0;
    if (missingTags.length > 0) {
      const reserved = await counters.reserveTagSlots(projectId, missingTags.length, MAX_TAGS_PER_PROJECT);
      if (reserved === null) return fail("project_tag_limit");
      firstTagId = reserved;
    }
    if (
      missingKeys.length > 0 &&
      !(await counters.reserveTraitKeySlots(projectId, missingKeys.length, MAX_TRAIT_KEYS_PER_PROJECT))
    ) {
      await counters.releaseSlots(projectId, missingTags.length, 0);
      return fail("project_trait_limit");
    }

    const labelled = missingTags.map((tag) => ({ tag, label: labels.get(tag) ?? tag }));
    const insertedTags = await tagStore.insertTags(projectId, firstTagId, labelled, now);
    const insertedKeys = await traitKeys.insertTraitKeys(projectId, missingKeys, now);
    // Another process registered some of them first: give back the slots taken twice.
    await counters.releaseSlots(
      projectId,
      missingTags.length - insertedTags.length,
      missingKeys.length - insertedKeys.length,
    );
    for (const tag of missingTags) knownIn(this.knownTags, projectId).add(tag);
    for (const key of missingKeys) knownIn(this.knownKeys, projectId).add(key);
    return ok(undefined);
  }
}

/** The names not registered yet: those neither cached nor found by `lookup` (which fills the cache). */
async function missing(
  known: Set<string>,
  names: readonly string[],
  lookup: (names: string[]) => Promise<Set<string>>,
): Promise<string[]> {
  const unknown = [...new Set(names)].filter((name) => !known.has(name));
  if (unknown.length === 0) return [];
  for (const name of await lookup(unknown)) known.add(name);
  return unknown.filter((name) => !known.has(name));
}

function knownIn(cache: Map<string, Set<string>>, projectId: string): Set<string> {
  let known = cache.get(projectId);
  if (!known) cache.set(projectId, (known = new Set()));
  return known;
}
