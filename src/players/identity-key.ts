/**
 * A profile's identity key: `u:<partner_user_id>` for a
 * partner-identified player, `d:<device_id>` for a device-only one. The prefix
 * keeps the two id spaces apart, so a device id can never name a partner's profile.
 */
export const partnerKey = (partnerUserId: string): string => `u:${partnerUserId}`;

export const deviceKey = (deviceId: string): string => `d:${deviceId}`;
