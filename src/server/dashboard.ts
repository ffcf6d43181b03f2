import { readFile } from "node:fs/promises";
import path from "node:path";
import { DASHBOARD_DIST_DIR } from "../dashboard/build.js";
import { sendError } from "./http/http-errors.js";
import type { NodeRequest, NodeResponse } from "./http/node-types.js";

/** The built assets by URL path; nothing else under /dashboard is served. */
const ASSETS: Readonly<Record<string, { file: string; type: string }>> = {
  "/dashboard": { file: "index.html", type: "text/html; charset=utf-8" },
  "/dashboard/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/dashboard/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/dashboard/app.css": { file: "app.css", type: "text/css; charset=utf-8" },
};

/**
 * Only the page's own scripts and styles, calls to this origin, and no framing: an injected script could
 * neither run nor send the key elsewhere. Charts draw on a canvas; uPlot sizes elements through the CSSOM,
 * which style-src does not govern.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export function isDashboardPath(path: string): boolean {
  return path === "/dashboard" || path.startsWith("/dashboard/");
}

/**
 * `GET /` from a browser (one that accepts HTML) is sent to the dashboard; an API caller asking for JSON keeps the
 * 404 `not_found` of any path without an endpoint.
 */
export function isBrowserAtRoot(req: NodeRequest, path: string): boolean {
  return path === "/" && (req.method === "GET" || req.method === "HEAD") && /text\/html/.test(req.headers.accept ?? "");
}

export function redirectToDashboard(res: NodeResponse): void {
  res.statusCode = 302;
  res.setHeader("location", "/dashboard");
  res.setHeader("content-length", 0);
  res.end();
}

/** GET /dashboard and its assets, built by `npm run build` (and by `npm start` when missing or stale). */
export async function serveDashboard(req: NodeRequest, res: NodeResponse, urlPath: string): Promise<void> {
  const asset = ASSETS[urlPath];
  if (req.method !== "GET" && req.method !== "HEAD") return sendError(res, 405, "method_not_allowed", "use GET");
  if (!asset) return sendError(res, 404, "not_found", `no endpoint ${urlPath}`);
  const body = await readFile(path.join(DASHBOARD_DIST_DIR, asset.file)).catch(() => undefined);
  if (!body) return sendError(res, 404, "not_found", "the dashboard is not built: run npm run build");
  res.statusCode = 200;
  res.setHeader("content-type", asset.type);
  res.setHeader("content-length", body.length);
  res.setHeader("content-security-policy", CONTENT_SECURITY_POLICY);
  res.setHeader("x-content-type-options", "nosniff");
  res.setHeader("referrer-policy", "no-referrer");
  res.setHeader("cache-control", "no-cache");
  res.end(body); // Node sends no body for HEAD
}
