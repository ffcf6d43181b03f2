import type { Db } from "mongodb";
import { type Engine, throwIfRefused } from "../../db/engine.js";
import { projectScopedId } from "../../db/ids.js";

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
