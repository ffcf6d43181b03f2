import { deleteStep } from "../delete-step.js";
import type { Db } from "mongodb";
import { projectOfId } from "../../db/ids.js";
import { scanProject } from "../../db/project-scan.js";
import type { Engine } from "../../db/engine.js";
import type { CohortDays } from "./cohort-rollup-store.js";
import { HistoryMemory, type FoundHistory } from "./history-memory.js";
import {
  HistoryWriteFailed,
  type PlayerRollup,
  type PlayerRollupDoc,
  playerRollupId,
  SlotNumbers,
  slotsOf,
  type SlottedHistories,
  toRollup,
  type WaitingChange,
  waitingHistories,
} from "./player-rollup.js";
import { addToSlot } from "../reads/sums.js";
import { absorb, absorbEach, type AbsorbOptions, type DocumentChange, type RollupDoc } from "../apply/absorb.js";
import type { Pending, PendingSelection, WriteBehind } from "../../db/owner-memory.js";

/** Histories read from the database at once when summed, so memory stays bounded. */
const READ_SLICE = 1000;

/**
 * The event_player_rollups collection: per player, daily event counts by name.
 * Where the instance owns its database, histories are kept in memory too
 * (HistoryMemory); many are read by the engine's way (src/db/engine.ts).
 */
export class PlayerRollupStore {
  private readonly rollups;
  /** The same collection, as absorb() writes it. */
  private readonly writes;
  private readonly memory: HistoryMemory | null;
  /** Changes applied to the owner's memory and not written yet: only where it keeps whole projects. */
  private readonly behind: WriteBehind<WaitingChange> | null;
  /** Projects whose last write of what waited failed: nothing more waits for them until one succeeds. */
  private readonly failing = new Set<string>();

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.rollups = db.collection<PlayerRollupDoc>("event_player_rollups");
    this.writes = db.collection<RollupDoc>("event_player_rollups");
    this.memory = engine.ownerMemory && new HistoryMemory(engine.ownerMemory);
    this.behind = this.memory && waitingHistories();
  }

  /**
   * The histories of `identityKeys` that have one: from memory, the rest read
   * by `_id`. With `fillMemory` (the apply worker, the only writer) the owner's
   * memory is first filled with the whole project by one scan, when it fits.
   */
  async read(
    projectId: string,
    identityKeys: readonly string[],
    { fillMemory = false } = {},
  ): Promise<Map<string, PlayerRollup>> {
    if (this.memory && fillMemory) await this.memory.fill(projectId, () => this.scan(projectId));
    const found = new Map<string, PlayerRollup>();
    const missing: string[] = [];
    for (const key of identityKeys) {
      const known = this.memory?.get(projectId, playerRollupId(projectId, key));
      if (known === undefined) missing.push(key);
      else if (known) found.set(key, known);
    }
    const epoch = this.memory?.epoch ?? 0;
    const docs = await this.engine.readByIds(
      this.rollups,
      missing.map((key) => playerRollupId(projectId, key)),
    );
    docs.forEach((doc, i) => {
      const rollup = doc && toRollup(doc);
      this.memory?.read(epoch, projectId, missing[i], doc && rollup && { id: doc._id, rollup, hw: doc.hw });
      if (rollup) found.set(rollup.identityKey, rollup);
    });
    return found;
  }

  /** Every history of the project: a scan of the collection. */
  private async scan(projectId: string): Promise<FoundHistory[]> {
    return scanProject(this.rollups, projectId, (doc) => ({ id: doc._id, rollup: toRollup(doc), hw: doc.hw }));
  }

  /** Fills the owner's memory of the project's histories (a start, before it is ready), when it fits. */
  async fillMemory(projectId: string): Promise<void> {
    await this.memory?.fill(projectId, () => this.scan(projectId));
  }

  /**
   * Adds the histories of `identityKeys` on `days` to `totals`: events, one
   * player per day and name with any, and the sums of `sumIds`. From memory
   * where it holds them; the rest read in slices of READ_SLICE, so memory stays bounded.
   */
  async sum(
    projectId: string,
    identityKeys: readonly string[],
    days: ReadonlySet<string>,
    totals: CohortDays,
    sumIds: ReadonlySet<string> = new Set(),
  ) {
    const missing = this.memory ? this.memory.sum(projectId, identityKeys, days, totals, sumIds) : identityKeys;
    for (let from = 0; from < missing.length; from += READ_SLICE) {
      const rollups = await this.read(projectId, missing.slice(from, from + READ_SLICE));
      for (const rollup of rollups.values()) {
        for (const [day, names] of Object.entries(rollup.days)) {
          if (!days.has(day)) continue;
          for (const [field, events] of Object.entries(names)) {
            if (events <= 0) continue;
            const total = ((totals[day] ??= {})[field] ??= { e: 0, p: 0 });
            total.e += events;
            total.p += 1;
            if (sumIds.size > 0) addToSlot(total, rollup.sums[day]?.[field], sumIds);
          }
        }
      }
    }
  }

  /**
   * The histories of the keys of `identityKeys` (lists that may overlap; every history of the project when null) as
   * slots of one numbering of their (day, name field) pairs: what the KPIs read. From the owner's memory (filled
   * with the project, when it fits), the rest from the database (a scan of the project for all, else by `_id` in
   * slices of READ_SLICE); folded devices' (empty) histories left out.
   */
  async slotted(projectId: string, identityKeys: readonly (readonly string[])[] | null): Promise<SlottedHistories> {
    // A project not yet applied since the start (nothing waits to be written for it) is filled as the worker fills it.
    if (this.memory) await this.memory.fill(projectId, () => this.scan(projectId));
    const remembered = this.memory?.slotted(projectId, identityKeys);
    if (remembered?.missing.length === 0) return remembered;
    const numbers = remembered?.numbers ?? this.memory?.numbersOf(projectId) ?? new SlotNumbers();
    const players = new Map(remembered?.players);
    // Histories read here are numbered after the remembered ones.
    let ordinals = remembered?.ordinals ?? 0;
    const add = (rollup: PlayerRollup) => {
      if (rollup.foldedInto === null) players.set(rollup.identityKey, slotsOf(rollup.days, numbers, ordinals++));
    };
    if (!remembered && identityKeys === null) {
      for (const { rollup } of await this.scan(projectId)) add(rollup);
      return { numbers, players, ordinals };
    }
    const missing = remembered?.missing ?? [...new Set(identityKeys!.flat())];
    for (let from = 0; from < missing.length; from += READ_SLICE) {
      for (const rollup of (await this.read(projectId, missing.slice(from, from + READ_SLICE))).values()) add(rollup);
    }
    return { numbers, players, ordinals };
  }

  /**
   * Segment `seq`'s changes. With `writeBehind` (the time now, for a segment applied in queue order, its plan just
   * stored), where the owner's memory holds their projects whole and no earlier write of theirs failed, they are
   * applied to it and written later by writeBehind(), merged with the next segments' changes of the same players;
   * otherwise what waits of their projects is written first, then these.
   */
  async absorb(
    seq: number,
    changes: readonly DocumentChange[],
    options: AbsorbOptions & { writeBehind?: Date },
  ): Promise<void> {
    const projects = new Set(changes.map((change) => projectOfId(change.id)));
    const deferrable = () =>
      [...projects].every((projectId) => this.memory?.holdsWhole(projectId) && !this.failing.has(projectId));
    const among = (projectId: string) => projects.has(projectId);
    const at = options.writeBehind?.getTime();
    if (
      at !== undefined &&
      options.fresh &&
      this.behind &&
      deferrable() &&
      this.behind.add(waiting(seq, changes), at)
    ) {
      this.memory!.absorbed(seq, changes);
      // Past the memory's budget a project is no longer whole: its reads go to the database, which must hold it.
      if (!deferrable()) await this.writeBehind({ among });
      return;
    }
    await this.writeBehind({ among });
    try {
      await absorb(this.engine, this.writes, seq, changes, options);
    } catch (error) {
      this.memory?.forget(changes);
      throw error;
    }
    this.memory?.absorbed(seq, changes);
  }

  /** The first segment whose history changes are not all written; undefined when none waits. */
  get firstUnwritten(): number | undefined {
    return this.behind?.oldest?.entry.first;
  }

  /** Documents with changes not written yet. */
  get unwritten(): number {
    return this.behind?.size ?? 0;
  }

  /** When the change waiting longest came (ms); undefined when none waits. */
  get oldestUnwrittenAt(): number | undefined {
    return this.behind?.oldest?.at;
  }

  /**
   * Writes the changes that wait (those `selection` picks; all by default), one statement a document. A project
   * whose write fails keeps its changes waiting (the memory holds them) and the others' are written: the error
   * names it.
   */
  async writeBehind(selection: PendingSelection = {}): Promise<void> {
    const entries = this.behind?.entries(selection) ?? [];
    if (entries.length === 0) return;
    try {
      await this.writeEntries(entries);
      return;
    } catch (error) {
      const projects = [...new Set(entries.map(({ entry }) => projectOfId(entry.change.id)))];
      if (projects.length === 1) throw new HistoryWriteFailed(projects, error);
    }
    const byProject = new Map<string, Pending<WaitingChange>[]>();
    for (const pending of entries) {
      const projectId = projectOfId(pending.entry.change.id);
      if (!byProject.has(projectId)) byProject.set(projectId, []);
      byProject.get(projectId)!.push(pending);
    }
    const failed: string[] = [];
    for (const [projectId, ofProject] of byProject) {
      await this.writeEntries(ofProject).catch(() => failed.push(projectId));
    }
    if (failed.length > 0) throw new HistoryWriteFailed(failed);
  }

  /**
   * Writes again the history changes of applied segments that a crash may have kept from the database (their plans,
   * in queue order): each document's mark read once, the changes newer than it merged per document and written.
   */
  async writeAgain(segments: readonly { seq: number; changes: readonly DocumentChange[] }[]): Promise<void> {
    const ids = [...new Set(segments.flatMap(({ changes }) => changes.map((change) => change.id)))];
    const marks = await this.engine.readByIds(this.rollups, ids);
    const stored = new Map(ids.map((id, i) => [id, marks[i]?.hw ?? -1]));
    let merged = waitingHistories();
    const write = () => absorbEach(this.engine, this.writes, changesOf(merged.entries()), { fresh: true });
    for (const { seq, changes } of segments) {
      const newer = waiting(seq, changes).filter(({ change }) => stored.get(change.id)! < seq);
      if (merged.add(newer, 0)) continue;
      await write();
      merged = waitingHistories();
      merged.add(newer, 0);
    }
    await write();
    this.memory?.forget(ids.map((id) => ({ id })));
  }

  private async writeEntries(entries: readonly Pending<WaitingChange>[]): Promise<void> {
    const projects = new Set(entries.map(({ entry }) => projectOfId(entry.change.id)));
    // After a failure a write may be half done: the next one reads the marks, as after a crash.
    const fresh = [...projects].every((projectId) => !this.failing.has(projectId));
    try {
      await absorbEach(this.engine, this.writes, changesOf(entries), { fresh });
    } catch (error) {
      for (const projectId of projects) this.failing.add(projectId);
      throw error;
    }
    for (const projectId of projects) this.failing.delete(projectId);
    this.behind!.written(entries);
  }

  /**
   * The players with a history who carried trait `key` when last touched.
   * Read once when a key turns on, in queue order: it scans.
   */
  async holdersOf(projectId: string, key: string): Promise<string[]> {
    await this.writeBehind({ among: (other) => other === projectId });
    const docs = await this.rollups
      .find({ project_id: projectId, trait_keys: key, folded_into: null }, { projection: { identity_key: 1 } })
      .toArray();
    return docs.map((doc) => doc.identity_key);
  }

  /** Players with no event inside the window (`lastDay` before it) go whole. A periodic sweep: it scans. */
  async deleteIdle(beforeDay: string, limit: number): Promise<number> {
    await this.writeBehind();
    try {
      const ids = await deleteStep(this.rollups, { last_day: { $lt: beforeDay } }, limit);
      // The worker, which runs this sweep, is the histories' one writer: what it found idle is deleted.
      this.memory?.deleted(ids);
      return ids.length;
    } catch (error) {
      this.memory?.forgetAll();
      throw error;
    }
  }
}

/** Segment `seq`'s changes as they wait to be written. */
const waiting = (seq: number, changes: readonly DocumentChange[]): WaitingChange[] =>
  changes.map((change) => ({ seq, first: seq, change }));

const changesOf = (entries: readonly Pending<WaitingChange>[]) => entries.map(({ entry }) => entry);
