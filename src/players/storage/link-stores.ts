import type { Db } from "mongodb";
import { throwIfRefused, type Engine } from "../../db/engine.js";
import { projectScopedId } from "../../db/ids.js";

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

  /** An erasure finds a player's devices by an index where the engine has query indexes (src/db/engine.ts). */
  async createIndexes(queryIndexes: boolean): Promise<void> {
    if (queryIndexes) await this.devices.createIndex({ project_id: 1, partner_user_id: 1 });
  }

  /** The devices linked to `partnerUserId` (an erasure's; on the embedded engine a scan of the project's links). */
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

/** The player_accounts collection: player (`partner_user_id`) → platform user, `_id` `<project>/<partner_user_id>`. */
export class AccountLinkStore {
  private readonly accounts;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.accounts = db.collection<AccountLinkDoc>("player_accounts");
  }

  async findPlatformUser(projectId: string, partnerUserId: string): Promise<string | null> {
    return (await this.findPlatformUsers(projectId, [partnerUserId]))[0];
  }

  /** The platform user linked to each of `partnerUserIds`, in order (null where none). */
  async findPlatformUsers(projectId: string, partnerUserIds: readonly string[]): Promise<(string | null)[]> {
    const ids = partnerUserIds.map((partner) => projectScopedId(projectId, partner));
    return (await this.engine.readByIds(this.accounts, ids)).map((doc) => doc?.platform_user_id ?? null);
  }

  async link(projectId: string, partnerUserId: string, platformUserId: string, now: Date): Promise<void> {
    await this.accounts.updateOne(
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
    );
  }

  /** Removes the partner id's link (an erasure); the platform user it named, or null when there was none. */
  async unlink(projectId: string, partnerUserId: string): Promise<string | null> {
    const removed = await this.accounts.findOneAndDelete({ _id: projectScopedId(projectId, partnerUserId) });
    return removed?.platform_user_id ?? null;
  }
}
