import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import {
  createAsyncIterable,
  readAllBytes,
  type UniversalHandler,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { findCompression, isByteStream, withPlainBody } from "./body-bytes.js";
import { errorResponse, wrapHandler } from "../calls/handler-wrapper.js";
import { inspectJsonBody } from "./json-request.js";
import { protoKeyPaths, unreadableTimestamps } from "../http/protocol.js";
import { decodeUtf8Body } from "./unicode.js";

/** A Connect unary JSON request, as connect-es recognises one. */
const CONNECT_UNARY_JSON = /^application\/json(?:; ?charset=utf-?8)?$/i;

/**
 * A Connect JSON request gets the checks of a /v1 body that protobuf-es's
 * JSON reader lacks (json-request.ts): a number not in decimal ("0x2a", which
 * the reader takes as 42) is invalid_argument, and the `__proto__` keys the
 * reader drops are reported beside the message, as the gateway reports them.
 * The body is read here and handed on unchanged (but for the timestamps the
 * check removes or rewrites, see BodyFindings); anything this check cannot
 * read (bad UTF-8, malformed JSON, an unknown encoding) is left to connect's
 * own reader and its error. /v1 requests arrive parsed and checked, and pass.
 */
export function checkConnectJson(handler: UniversalHandler, readMaxBytes: number): UniversalHandler {
  const checked = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const contentType = req.header.get("content-type") ?? "";
    if (req.method !== "POST" || !CONNECT_UNARY_JSON.test(contentType) || !isByteStream(req.body)) {
      return handler(req);
    }
    let bytes: Uint8Array;
    let json: JsonValue | undefined;
    try {
      bytes = await readAllBytes(req.body, readMaxBytes, req.header.get("content-length"));
      json = await readJson(bytes, req.header.get("content-encoding"), readMaxBytes);
    } catch (error) {
      return errorResponse(ConnectError.from(error));
    }
    const contextValues = req.contextValues ?? createContextValues();
    if (json === undefined) return handler({ ...req, body: createAsyncIterable([bytes]), contextValues });
    const inspected = inspectJsonBody(handler.method.input, json);
    if (!inspected.ok) return errorResponse(new ConnectError(inspected.error, Code.InvalidArgument));
    contextValues.set(protoKeyPaths, inspected.value.protoKeyPaths);
    contextValues.set(unreadableTimestamps, inspected.value.unreadableTimestamps);
    if (!inspected.value.rewritten) return handler({ ...req, body: createAsyncIterable([bytes]), contextValues });
    // The check removed unreadable timestamps from the JSON or rewrote readable ones: hand on that JSON, plain.
    const rewritten = new TextEncoder().encode(JSON.stringify(json));
    return handler({ ...withPlainBody(req, rewritten, "content-encoding"), contextValues });
  };
  return wrapHandler(handler, checked);
}

/** The body's JSON, or undefined when connect's reader should judge it. */
async function readJson(bytes: Uint8Array, encoding: string | null, readMaxBytes: number) {
  const compression = findCompression(encoding);
  if (compression === undefined) return undefined;
  const plain = compression ? await compression.decompress(bytes, readMaxBytes) : bytes;
  const text = decodeUtf8Body(plain);
  if (text === undefined || text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}
