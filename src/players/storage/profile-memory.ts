import type { OwnerMemory } from "../../db/owner-memory.js";
import { sortKeys } from "../rules/identity-key.js";
import type { TraitValue } from "../rules/normalise.js";
import type { ProfileRecord, ProfileSlot } from "../rules/profile.js";

interface ProjectProfiles {
  slots: Map<string, ProfileSlot>;
  bytes: number;
  /** Every profile of the project is in `slots` (a fill finished and nothing was forgotten since). */
  complete: boolean;
  /** The live profiles of `slots` in identity key order, listed at the first read after a write. */
  live?: ProfileRecord[];
  /** The holders of the trait values searched, kept by every write. */
  holders: TraitHolderIndex;
}

/**
 * A slot's size in memory: a fixed part, characters at two bytes, and each tag and trait with its own overhead
 * (its string, its Map entry). Calibrated on the heap at 1,000,000 profiles of 3 tags and 2 traits (bench/README.md):
 * about 1.65 KB each, where strings alone would say 0.7 KB.
 */
function sizeOf(slot: ProfileSlot): number {
  const profile = slot.profile ?? slot.snapshot;
  if (!profile) return 200;
  let chars = profile.identityKey.length + (profile.partnerUserId?.length ?? 0) + (profile.deviceId?.length ?? 0);
  for (const tag of profile.tags) chars += tag.length + 40;
  for (const [key, value] of profile.traits) chars += key.length + String(value).length + 100;
  for (const { id } of profile.requests ?? []) chars += id.length + 32;
  return 900 + 2 * chars;
}

/**
 * The owner's memory of player profiles (embedded FerretDB only): per project,
 * every profile slot, filled by one scan of the project's profiles when a
 * cohort read first needs them, then kept by every acknowledged profile write
 * (ProfileStore.writeSlots, the only writer). A write that fails may or may
 * not have applied, so the project is forgotten and filled again on the next
 * read. Slots are handed out as copies: callers change what they read.
 */
export class ProfileMemory {
  private readonly projects = new Map<string, ProjectProfiles>();
  /** Fills in flight, by project: concurrent reads share one scan. */
  private readonly filling = new Map<string, Promise<boolean>>();
  /** Projects that did not fit, with the bytes they needed: not scanned again until that much is free. */
  private readonly tooLarge = new Map<string, number>();

  constructor(private readonly budget: OwnerMemory) {}

  /** Every slot of the project, when all are in memory. */
  whole(projectId: string): ReadonlyMap<string, ProfileSlot> | null {
    const project = this.projects.get(projectId);
    return project?.complete ? project.slots : null;
  }

  /**
   * The live profiles of a project whole in memory (shared: read only), in identity key order, kept as a list until
   * the next write: every export of the project until then reads it as it goes, none sorts.
   */
  liveProfiles(projectId: string): readonly ProfileRecord[] | null {
    const project = this.projects.get(projectId);
    if (!project?.complete) return null;
    const { slots } = project;
    project.live ??= sortKeys([...slots].flatMap(([key, slot]) => (slot.profile ? [key] : []))).map(
      (key) => slots.get(key)!.profile!,
    );
    return project.live;
  }

  /**
   * Per trait key and value, the players holding it, when the project is whole in memory; null otherwise, or when
   * the sets do not fit the budget.
   */
  traitHolders(projectId: string, pairs: readonly [string, TraitValue][]): ReadonlySet<string>[] | null {
    const project = this.projects.get(projectId);
    if (!project?.complete) return null;
    const before = project.holders.bytes;
    const sets = pairs.map(([key, value]) => project.holders.of(key, value, project.slots));
    return this.charged(project, before) ? sets : null;
  }

  /** A copy of a known slot (absent: no profile) when the project is whole in memory, else undefined. */
  slot(projectId: string, identityKey: string): ProfileSlot | undefined {
    const slots = this.whole(projectId);
    if (!slots) return undefined;
    const slot = slots.get(identityKey);
    return slot ? structuredClone(slot) : { profile: null, version: 0, foldedInto: null };
  }

  /**
   * Makes the project whole in memory from `scan` (every slot of the project);
   * false when it does not fit the budget or a write failed meanwhile.
   */
  async fill(projectId: string, scan: () => Promise<Map<string, ProfileSlot>>): Promise<boolean> {
    if (this.whole(projectId)) return true;
    const needed = this.tooLarge.get(projectId);
    if (needed !== undefined && !this.budget.fits(needed)) return false;
    let filling = this.filling.get(projectId);
    if (!filling) {
      filling = this.load(projectId, scan).finally(() => this.filling.delete(projectId));
      this.filling.set(projectId, filling);
    }
    return filling;
  }

  /** Acknowledged writes: each slot as written (with its new version). */
  written(projectId: string, slots: readonly [string, ProfileSlot][]): void {
    const project = this.projects.get(projectId);
    if (!project) return;
    for (const [identityKey, slot] of slots) {
      if (!this.put(project, identityKey, structuredClone(slot))) return this.forget(projectId);
    }
  }

  /** A write whose outcome is unknown: nothing of the project is trusted until the next fill. */
  forget(projectId: string): void {
    const project = this.projects.get(projectId);
    if (!project) return;
    this.projects.delete(projectId);
    this.budget.give(project.bytes);
  }

  private async load(projectId: string, scan: () => Promise<Map<string, ProfileSlot>>): Promise<boolean> {
    // Writes acknowledged while the scan runs land here too; the newer version of a slot wins.
    const project: ProjectProfiles = { slots: new Map(), bytes: 0, complete: false, holders: new TraitHolderIndex() };
    this.projects.set(projectId, project);
    let scanned: Map<string, ProfileSlot>;
    try {
      scanned = await scan();
    } catch (error) {
      this.forget(projectId);
      throw error;
    }
    // Forgotten meanwhile (a failed write): the scan may have missed what that write did.
    if (this.projects.get(projectId) !== project) return false;
    for (const [identityKey, slot] of scanned) {
      const known = project.slots.get(identityKey);
      if (known && known.version >= slot.version) continue;
      if (!this.put(project, identityKey, slot)) {
        this.tooLarge.set(
          projectId,
          [...scanned.values()].reduce((sum, one) => sum + sizeOf(one), 0),
        );
        this.forget(projectId);
        return false;
      }
    }
    this.tooLarge.delete(projectId);
    project.complete = true;
    return true;
  }

  private put(project: ProjectProfiles, identityKey: string, slot: ProfileSlot): boolean {
    const before = project.slots.get(identityKey);
    const delta = sizeOf(slot) - (before ? sizeOf(before) : 0);
    if (delta > 0 && !this.budget.take(delta)) return false;
    if (delta < 0) this.budget.give(-delta);
    project.bytes += delta;
    project.slots.set(identityKey, slot);
    project.live = undefined;
    const holdersBefore = project.holders.bytes;
    project.holders.written(identityKey, slot);
    this.charged(project, holdersBefore);
    return true;
  }

  /** Charges the budget with what the trait holders grew by since `before`; past it, they are dropped (false). */
  private charged(project: ProjectProfiles, before: number): boolean {
    const delta = project.holders.bytes - before;
    if (delta <= 0 || this.budget.take(delta)) {
      if (delta < 0) this.budget.give(-delta);
      project.bytes += delta;
      return true;
    }
    project.bytes -= before;
    this.budget.give(before);
    project.holders.clear();
    return false;
  }
}

/** Trait values a project keeps the holders of: the ones searched most recently. */
const VALUES_KEPT = 16;
/** A holder's cost on the heap: its entry in a Set (the key string is the profile's own; measured 37 B). */
const HOLDER_BYTES = 40;

interface Holders {
  key: string;
  value: TraitValue;
  identityKeys: Set<string>;
}

/**
 * Per trait value searched, the project's players holding it, kept by every profile write beside the owner's memory
 * of profiles (ProfileMemory). A search by tag and trait checks each tag member against these sets instead of
 * looking up its profile's traits: 10,000 members among 100,000 profiles in 1 ms against 8–11 ms (measured).
 */
export class TraitHolderIndex {
  /** By trait key and value, the most recently searched last. */
  private readonly byValue = new Map<string, Holders>();
  /** What the sets take on the heap, estimated. */
  bytes = 0;

  /** The holders of `key` = `value`, listed from `slots` the first time. */
  of(key: string, value: TraitValue, slots: ReadonlyMap<string, ProfileSlot>): ReadonlySet<string> {
    const id = JSON.stringify([key, value]);
    let holders = this.byValue.get(id);
    if (holders) {
      this.byValue.delete(id);
    } else {
      const identityKeys = new Set<string>();
      for (const [identityKey, slot] of slots)
        if (slot.profile?.traits.get(key) === value) identityKeys.add(identityKey);
      holders = { key, value, identityKeys };
      this.bytes += HOLDER_BYTES * identityKeys.size;
    }
    this.byValue.set(id, holders);
    if (this.byValue.size > VALUES_KEPT) this.drop(this.byValue.keys().next().value!);
    return holders.identityKeys;
  }

  /** A profile slot as written: each set follows it. */
  written(identityKey: string, slot: ProfileSlot): void {
    for (const { key, value, identityKeys } of this.byValue.values()) {
      const holds = slot.profile?.traits.get(key) === value;
      if (holds && !identityKeys.has(identityKey)) {
        identityKeys.add(identityKey);
        this.bytes += HOLDER_BYTES;
      } else if (!holds && identityKeys.delete(identityKey)) {
        this.bytes -= HOLDER_BYTES;
      }
    }
  }

  clear(): void {
    this.byValue.clear();
    this.bytes = 0;
  }

  private drop(id: string): void {
    this.bytes -= HOLDER_BYTES * (this.byValue.get(id)?.identityKeys.size ?? 0);
    this.byValue.delete(id);
  }
}
