import type { Db } from "mongodb";
import { batchedWrite } from "../db/batched-write.js";
import { projectScopedId } from "../db/ids.js";
import { sideBySide } from "../db/side-by-side.js";

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

  /** The links of `deviceIds` (null where unlinked), read side by side by `_id`. */
  async findMany(projectId: string, deviceIds: readonly string[]): Promise<Map<string, DeviceLink | null>> {
    const ids = [...new Set(deviceIds)];
    const links = await sideBySide(ids, (deviceId) => this.find(projectId, deviceId));
    return new Map(ids.map((deviceId, i) => [deviceId, links[i]]));
  }

  async find(projectId: string, deviceId: string): Promise<DeviceLink | null> {
    const doc = await this.devices.findOne({ _id: projectScopedId(projectId, deviceId) });
    return doc && { partnerUserId: doc.partner_user_id, platformUserId: doc.platform_user_id ?? null };
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
    const failures = await batchedWrite(this.devices, operations);
    if (failures.length > 0) throw new Error(`device link write failed with code ${failures[0].code}`);
  }
}
