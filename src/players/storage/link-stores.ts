import type { Db } from "mongodb";
import { throwIfRefused, type Engine } from "../../db/engine.js";
import type { OwnerMemory } from "../../db/owner-memory.js";
import { projectScopedId } from "../../db/ids.js";
import { scanProject } from "../../db/project-scan.js";

/* The links of a player: a device to the partner id it played as, a partner id to its platform user. */

interface DeviceLinkDoc {
  _id: string;
  project_id: string;
  device_id: string;
  partner_user_id: string;
  /** The platform user of the profile the device was linked to, when that profile had one. */
  platform_user_id: string | null;
  linked_at: Date;
}

/** Whom a device is linked to. */
export interface DeviceLink {
  partnerUserId: string;
  platformUserId: string | null;
}

/** The player_devices collection: device → player, `_id` `<project>/<device_id>`. */
export class DeviceLinkStore {
  private readonly devices;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.devices = db.collection<DeviceLinkDoc>("player_devices");
  }

  /** The links of `deviceIds` (null where unlinked), read by `_id`. */
  async findMany(projectId: string, deviceIds: readonly string[]): Promise<Map<string, DeviceLink | null>> {
    const ids = [...new Set(deviceIds)];
    const docs = await this.engine.readByIds(
      this.devices,
      ids.map((deviceId) => projectScopedId(projectId, deviceId)),
    );
    return new Map(ids.map((deviceId, i) => [deviceId, linkOf(docs[i])]));
  }

  async find(projectId: string, deviceId: string): Promise<DeviceLink | null> {
    return linkOf(await this.devices.findOne({ _id: projectScopedId(projectId, deviceId) }));
  }

  /** The devices linked to `partnerUserId` (an erasure's; a scan of the project's links: no index answers it). */
  async devicesOf(projectId: string, partnerUserId: string): Promise<string[]> {
    const docs = await this.devices
      .find({ project_id: projectId, partner_user_id: partnerUserId }, { projection: { device_id: 1 } })
      .toArray();
    return docs.map((doc) => doc.device_id);
  }

  /** Removes the links of `deviceIds` (an erasure). */
  async unlinkMany(projectId: string, deviceIds: readonly string[]): Promise<void> {
    if (deviceIds.length === 0) return;
    await this.devices.deleteMany({ _id: { $in: deviceIds.map((deviceId) => projectScopedId(projectId, deviceId)) } });
  }

  async linkMany(projectId: string, links: ReadonlyMap<string, DeviceLink>, now: Date): Promise<void> {
    const operations = [...links].map(([deviceId, link]) => ({
      updateOne: {
        filter: { _id: projectScopedId(projectId, deviceId) },
        update: {
          $set: {
            project_id: projectId,
            device_id: deviceId,
            partner_user_id: link.partnerUserId,
            platform_user_id: link.platformUserId,
            linked_at: now,
          },
        },
        upsert: true,
      },
    }));
    const failures = await this.engine.writeAll(this.devices, operations);
    throwIfRefused("device link write", failures);
  }
}

const linkOf = (doc: DeviceLinkDoc | null): DeviceLink | null =>
  doc && { partnerUserId: doc.partner_user_id, platformUserId: doc.platform_user_id ?? null };

interface AccountLinkDoc {
  _id: string;
  project_id: string;
  partner_user_id: string;
  platform_user_id: string;
  linked_at: Date;
}

/** A project's links in the owner's memory: platform user by partner id, and the budget bytes they hold. */
interface ProjectLinks {
  links: Map<string, string>;
  bytes: number;
}

const linkBytes = (partnerUserId: string, platformUserId: string) =>
  200 + 2 * (partnerUserId.length + platformUserId.length);

/**
 * The player_accounts collection: player (`partner_user_id`) → platform user, `_id` `<project>/<partner_user_id>`.
 * On the owner of an embedded database (`memory`), a project's links are read by one scan at the first lookup and
 * kept by `link`, their only writer, so a write of new players looks up none of them one by one.
 */
export class AccountLinkStore {
  private readonly accounts;
  private readonly projects = new Map<string, ProjectLinks>();
  private readonly filling = new Map<string, Promise<ProjectLinks | null>>();
  /** Per project, link writes in flight and finished: a fill that overlapped one is not trusted. */
  private readonly writes = new Map<string, { inFlight: number; finished: number }>();
  /** Projects whose links did not fit, with the bytes they needed: not scanned again until that much is free. */
  private readonly tooLarge = new Map<string, number>();

  private readonly memory: OwnerMemory | null;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.accounts = db.collection<AccountLinkDoc>("player_accounts");
    this.memory = engine.ownerMemory;
  }

  async findPlatformUser(projectId: string, partnerUserId: string): Promise<string | null> {
    return (await this.findPlatformUsers(projectId, [partnerUserId]))[0];
  }

  /** The platform user linked to each of `partnerUserIds`, in order (null where none). */
  async findPlatformUsers(projectId: string, partnerUserIds: readonly string[]): Promise<(string | null)[]> {
    const known = await this.projectLinks(projectId);
    if (known) return partnerUserIds.map((partner) => known.links.get(partner) ?? null);
    const ids = partnerUserIds.map((partner) => projectScopedId(projectId, partner));
    return (await this.engine.readByIds(this.accounts, ids)).map((doc) => doc?.platform_user_id ?? null);
  }

  async link(projectId: string, partnerUserId: string, platformUserId: string, now: Date): Promise<void> {
    await this.written(projectId, () =>
      this.accounts.updateOne(
        { _id: projectScopedId(projectId, partnerUserId) },
        {
          $set: {
            project_id: projectId,
            partner_user_id: partnerUserId,
            platform_user_id: platformUserId,
            linked_at: now,
          },
        },
        { upsert: true },
      ),
    );
    const known = this.projects.get(projectId);
    if (!known) return;
    const before = known.links.get(partnerUserId);
    const delta = linkBytes(partnerUserId, platformUserId) - (before ? linkBytes(partnerUserId, before) : 0);
    if (!this.memory!.take(delta)) return this.forget(projectId);
    known.bytes += delta;
    known.links.set(partnerUserId, platformUserId);
  }

  /** Removes the partner id's link (an erasure); the platform user it named, or null when there was none. */
  async unlink(projectId: string, partnerUserId: string): Promise<string | null> {
    const removed = await this.written(projectId, () =>
      this.accounts.findOneAndDelete({ _id: projectScopedId(projectId, partnerUserId) }),
    );
    const known = this.projects.get(projectId);
    const before = known?.links.get(partnerUserId);
    if (known && before !== undefined) {
      known.links.delete(partnerUserId);
      const bytes = linkBytes(partnerUserId, before);
      known.bytes -= bytes;
      this.memory!.give(bytes);
    }
    return removed?.platform_user_id ?? null;
  }

  /** Runs a write of the project's links, counted while in flight; after a failure its outcome is unknown. */
  private async written<T>(projectId: string, write: () => Promise<T>): Promise<T> {
    const writes = this.writesOf(projectId);
    writes.inFlight++;
    try {
      return await write();
    } catch (error) {
      this.forget(projectId);
      throw error;
    } finally {
      writes.inFlight--;
      writes.finished++;
    }
  }

  /** Fills the owner's memory of the project's links (a start, before it is ready), when it fits. */
  async fillMemory(projectId: string): Promise<void> {
    await this.projectLinks(projectId);
  }

  /** The project's links from the owner's memory, filled once; null without memory or when they do not fit. */
  private async projectLinks(projectId: string): Promise<ProjectLinks | null> {
    if (!this.memory) return null;
    const known = this.projects.get(projectId);
    if (known) return known;
    const needed = this.tooLarge.get(projectId);
    if (needed !== undefined && !this.memory.fits(needed)) return null;
    let filling = this.filling.get(projectId);
    if (!filling) {
      filling = this.fill(projectId).finally(() => this.filling.delete(projectId));
      this.filling.set(projectId, filling);
    }
    return filling;
  }

  private async fill(projectId: string): Promise<ProjectLinks | null> {
    const writes = this.writesOf(projectId);
    if (writes.inFlight > 0) return null;
    const finishedBefore = writes.finished;
    const docs = await scanProject(this.accounts, projectId, (doc) => doc);
    if (writes.inFlight > 0 || writes.finished !== finishedBefore) return null;
    const links = new Map(docs.map((doc) => [doc.partner_user_id, doc.platform_user_id]));
    const bytes = docs.reduce((sum, doc) => sum + linkBytes(doc.partner_user_id, doc.platform_user_id), 0);
    if (!this.memory!.take(bytes)) {
      this.tooLarge.set(projectId, bytes);
      return null;
    }
    this.tooLarge.delete(projectId);
    const known = { links, bytes };
    this.projects.set(projectId, known);
    return known;
  }

  private writesOf(projectId: string): { inFlight: number; finished: number } {
    let writes = this.writes.get(projectId);
    if (!writes) this.writes.set(projectId, (writes = { inFlight: 0, finished: 0 }));
    return writes;
  }

  private forget(projectId: string): void {
    const known = this.projects.get(projectId);
    if (!known) return;
    this.projects.delete(projectId);
    this.memory!.give(known.bytes);
  }
}
