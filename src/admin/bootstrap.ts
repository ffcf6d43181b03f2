import { type ApiKeyStore, generateApiKey, hashApiKey } from "./api-keys.js";

/**
 * Makes sure an admin key exists. PLATFORM_ADMIN_KEY, when set, becomes the
 * bootstrap admin key (replacing an earlier one). Otherwise a key is generated
 * the first time only, and returned so that the caller can show it once.
 */
export async function ensureBootstrapAdminKey(
  store: ApiKeyStore,
  adminKey: string | undefined,
  now: Date,
): Promise<{ generatedKey: string | undefined }> {
  if (adminKey !== undefined) {
    await store.setBootstrapAdminKey(hashApiKey(adminKey), now);
    return { generatedKey: undefined };
  }
  if (await store.hasBootstrapAdminKey()) return { generatedKey: undefined };
  const { key } = generateApiKey("admin");
  await store.setBootstrapAdminKey(hashApiKey(key), now);
  return { generatedKey: key };
}
