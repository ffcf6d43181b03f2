/**
 * A profile's identity key: `u:<partner_user_id>` for a
 * partner-identified player, `d:<device_id>` for a device-only one. The prefix
 * keeps the two id spaces apart, so a device id can never name a partner's profile.
 */
export const partnerKey = (partnerUserId: string): string => `u:${partnerUserId}`;

export const deviceKey = (deviceId: string): string => `d:${deviceId}`;

/** The partner id a `u:` identity key names; null for a device's key. */
export const partnerOf = (identityKey: string): string | null =>
  identityKey.startsWith("u:") ? identityKey.slice(2) : null;
