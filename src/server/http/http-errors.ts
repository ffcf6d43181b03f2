import type { NodeResponse } from "./node-types.js";

/** Writes an error in the shape every protocol's JSON errors share: {"code", "message"}. */
export function sendError(res: NodeResponse, status: number, code: string, message: string): void {
  sendJson(res, status, { code, message });
}

export function sendJson(res: NodeResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.setHeader("content-length", Buffer.byteLength(text));
  res.end(text);
}
