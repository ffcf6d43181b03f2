import type { Db } from "mongodb";
import type { EntitlementStore } from "../admin/entitlement-store.js";
import type { ProjectStore } from "../admin/project-store.js";

/** A launch record as the collections before `entitlements` held it, `_id` `<project>/<platform_user_id>`. */
interface LegacyLaunchUserDoc {
  _id: string;
  project_id: string;
  platform_user_id: string;
  partner_user_id?: string;
  linked_at?: Date;
  linked_as?: string;
  installations?: string[];
}

// Oldest first: `launch_users` replaced `partner_links`, so its fields win.
const LEGACY_COLLECTIONS = ["partner_links", "launch_users"];

/**
 * Moves launch records kept before they joined the entitlement's document
 * (`partner_links`, then `launch_users`) into `entitlements`, and drops the
 * old collections. Runs at start, before any verify; a start cut short runs it
 * again, which sets the same fields.
 */
export async function migrateLaunchRecords(options: {
  db: Db;
  projectStore: ProjectStore;
  entitlementStore: EntitlementStore;
}): Promise<void> {
  const { db, projectStore, entitlementStore } = options;
  for (const name of LEGACY_COLLECTIONS) {
    // Checked by name: mongo-java-server answers listCollections with every collection, ignoring the filter.
    const found = await db.listCollections({ name }, { nameOnly: true }).toArray();
    if (!found.some((collection) => collection.name === name)) continue;
    const legacy = db.collection<LegacyLaunchUserDoc>(name);
    for await (const doc of legacy.find()) {
      // Records are only made for a project's launches and links, and projects are never removed.
      const project = await projectStore.findProject(doc.project_id);
      if (!project) continue;
      await entitlementStore.setLaunchRecord(doc.platform_user_id, project.gameId, {
        partnerUserId: doc.partner_user_id,
        linkedAt: doc.linked_at,
        linkedAs: doc.linked_as,
        installations: doc.installations,
      });
    }
    await legacy.drop();
  }
}
