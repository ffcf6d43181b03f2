import {
  getOption,
  type DescMessage,
  type DescMethod,
  type DescService,
  type JsonObject,
  type JsonValue,
} from "@bufbuild/protobuf";
import {
  createAsyncIterable,
  readAllBytes,
  type UniversalHandler,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { http as httpRule } from "../../../gen/google/api/annotations_pb.js";
import type { Logger } from "../../log.js";
import { clientContextValues } from "./client-address.js";
import { sendError } from "./http-errors.js";
import { writeExplicitNulls } from "../bodies/json-nulls.js";
import { parseJsonRequest } from "../bodies/json-request.js";
import { streamingRequest, writeNdjson } from "./ndjson-stream.js";
import type { NodeRequest, NodeResponse } from "./node-types.js";
import { protoKeyPaths, unreadableTimestamps, viaHttpJson } from "./protocol.js";

/** Largest /v1 request body accepted; larger ones get 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

export interface HttpGateway {
  /** Handles the request if its path is under /v1/; returns false otherwise. */
  handle(req: NodeRequest, res: NodeResponse): boolean;
}

interface Route {
  verb: string;
  method: DescMethod;
  handler: UniversalHandler;
}

/**
 * The HTTP/JSON API at /v1, derived at start-up from the google.api.http
 * annotations in the proto. A /v1 request is translated into a Connect unary
 * JSON call to the same handler the other protocols reach, so authentication,
 * validation, JSON rules and errors are shared; a server-streaming method's
 * into a Connect streaming call, answered as NDJSON (ndjson-stream.ts).
 */
export function createHttpGateway(
  services: readonly DescService[],
  handlers: readonly UniversalHandler[],
  log: Logger,
): HttpGateway {
  const byMethod = new Map<DescMethod, UniversalHandler>(handlers.map((h) => [h.method, h]));
  const routes = new Map<string, Route>();
  for (const service of services) {
    for (const method of service.methods) {
      const rule = getOption(method, httpRule);
      const handler = byMethod.get(method);
      const { case: verb, value: path } = rule.pattern;
      if (!handler || (verb !== "get" && verb !== "post") || typeof path !== "string") {
        throw new Error(`${service.typeName}.${method.name} needs a google.api.http get or post annotation`);
      }
      routes.set(path, { verb: verb.toUpperCase(), method, handler });
    }
  }

  function handle(req: NodeRequest, res: NodeResponse): boolean {
    const path = (req.url ?? "").split("?", 1)[0];
    if (!path.startsWith("/v1/")) return false;
    const route = routes.get(path);
    if (!route) {
      sendError(res, 404, "not_found", `no endpoint ${path}`);
    } else if (req.method !== route.verb) {
      res.setHeader("Allow", route.verb);
      sendError(res, 405, "invalid_argument", `${path} takes ${route.verb}, not ${req.method}`);
    } else {
      forward(req, res, route).catch((error: unknown) => {
        // Mostly a client that went away mid-request: nobody is left to answer, but the cause is worth a line.
        log.warn({ err: error, path }, "/v1 request ended without an answer");
        res.destroy();
      });
    }
    return true;
  }
  return { handle };
}

async function forward(req: NodeRequest, res: NodeResponse, route: Route): Promise<void> {
  let body: JsonObject = {};
  const contextValues = clientContextValues(req).set(viaHttpJson, true);
  if (route.verb === "POST") {
    const bytes = await readBody(req);
    if (bytes === undefined) {
      sendError(res, 413, "resource_exhausted", `request body is larger than ${MAX_BODY_BYTES} bytes`);
      return;
    }
    const parsed = parseJsonRequest(req.headers["content-type"], bytes, route.method.input);
    if (!parsed.ok) {
      sendError(res, parsed.error.status, "invalid_argument", parsed.error.message);
      return;
    }
    body = parsed.value.body;
    contextValues.set(protoKeyPaths, parsed.value.protoKeyPaths);
    contextValues.set(unreadableTimestamps, parsed.value.unreadableTimestamps);
  }
  const original = universalRequestFromNodeRequest(req, res, body, contextValues);
  const streams = route.method.methodKind === "server_streaming";
  const contentType = streams ? streamingRequest.contentType : "application/json";
  const header = new Headers({ "content-type": contentType, "connect-protocol-version": "1" });
  const apiKey = original.header.get("x-api-key");
  if (apiKey !== null) header.set("x-api-key", apiKey);
  const target = new URL(route.handler.requestPath, original.url);
  const request = { ...original, method: "POST", url: target.toString(), header };
  if (streams) {
    const response = await route.handler({ ...request, body: streamingRequest.body(body) });
    await writeNdjson(response, res, route.method.output);
    return;
  }
  const response = await route.handler(request);
  await universalResponseToNodeResponse(await withExplicitNulls(response, route.method.output), res);
}

/** A successful answer rewritten with `null` for unset fields that have presence (DESIGN: null versus absent). */
async function withExplicitNulls(response: UniversalServerResponse, output: DescMessage) {
  if (response.status !== 200 || response.body === undefined) return response;
  const json = JSON.parse(new TextDecoder().decode(await readAllBytes(response.body, Infinity))) as JsonValue;
  const bytes = new TextEncoder().encode(JSON.stringify(writeExplicitNulls(output, json)));
  const header = new Headers(response.header);
  header.set("content-length", String(bytes.byteLength));
  return { ...response, header, body: createAsyncIterable([bytes]) } satisfies UniversalServerResponse;
}

/**
 * The body's bytes, or undefined as soon as they exceed MAX_BODY_BYTES. The
 * rest of an oversized body is drained, not read, so the 413 still reaches a
 * client that is busy sending.
 */
function readBody(req: NodeRequest): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers["content-length"] ?? 0) > MAX_BODY_BYTES) {
      req.resume();
      resolve(undefined);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      if (size > MAX_BODY_BYTES) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) resolve(undefined);
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}
