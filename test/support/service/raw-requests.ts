import http2 from "node:http2";
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

/** A raw unary gRPC call over cleartext HTTP/2: one message frame (uncompressed) around `message`; resolves to the trailers. */
export async function rawGrpcCall(
  baseUrl: string,
  path: string,
  message: Uint8Array,
  headers: Record<string, string>,
): Promise<http2.IncomingHttpHeaders> {
  const session = http2.connect(baseUrl);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    const length = Buffer.alloc(4);
    length.writeUInt32BE(message.length);
    stream.end(Buffer.concat([Buffer.from([0]), length, message]));
    stream.resume();
    return await new Promise((resolve, reject) => {
      stream.on("trailers", resolve);
      stream.on("error", reject);
    });
  } finally {
    session.close();
  }
}
