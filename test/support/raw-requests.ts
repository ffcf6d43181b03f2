import { expect } from "vitest";

/** A raw POST: bytes and headers exactly as given (JSON.stringify would lose `__proto__` keys and bad bytes). */
export async function rawPost(url: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string>) {
  const res = await fetch(url, { method: "POST", headers, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

export const jsonHeaders = (apiKey: string) => ({ "content-type": "application/json", "x-api-key": apiKey });

/** An answer in the error shape of every protocol's JSON, {code, message}; with `field`, the message starts with it. */
export function expectError(res: { status: number; body: any }, status: number, code: string, field?: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(["code", "message"]);
  expect(res.body.code).toBe(code);
  if (field !== undefined) expect(res.body.message).toMatch(new RegExp(`^${field.replace(/[[\]]/g, "\\$&")}\\b`));
}
