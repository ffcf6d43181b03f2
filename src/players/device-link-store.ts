import type { Db } from "mongodb";
import { projectScopedId } from "../db/ids.js";

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

  constructor(db: Db) {
    this.devices = db.collection<DeviceLinkDoc>("player_devices");
  }

  /** Device id to the partner user it is linked to, for the linked ones among `deviceIds`. */
  async findOwners(projectId: string, deviceIds: readonly string[]): Promise<Map<string, string>> {
    if (deviceIds.length === 0) return new Map();
    const ids = [...new Set(deviceIds)].map((deviceId) => projectScopedId(projectId, deviceId));
    const docs = await this.devices.find(ids.length === 1 ? { _id: ids[0] } : { _id: { $in: ids } }).toArray();
    return new Map(docs.map((doc) => [doc.device_id, doc.partner_user_id]));
  }

  async find(projectId: string, deviceId: string): Promise<DeviceLink | null> {
    const doc = await this.devices.findOne({ _id: projectScopedId(projectId, deviceId) });
    return doc && { partnerUserId: doc.partner_user_id, platformUserId: doc.platform_user_id ?? null };
  }

  async link(projectId: string, deviceId: string, link: DeviceLink, now: Date): Promise<void> {
    await this.devices.updateOne(
      { _id: projectScopedId(projectId, deviceId) },
      {
        $set: {
          project_id: projectId,
          device_id: deviceId,
          partner_user_id: link.partnerUserId,
          platform_user_id: link.platformUserId,
          linked_at: now,
        },
      },
      { upsert: true },
    );
  }
}
