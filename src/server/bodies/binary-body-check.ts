import { fromBinary, type DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, createContextValues, type Interceptor } from "@connectrpc/connect";
import {
  createAsyncIterable,
  encodeEnvelope,
  pipe,
  readAllBytes,
  transformDecompressEnvelope,
  transformSplitEnvelope,
  type UniversalHandler,
} from "@connectrpc/connect/protocol";
import { parseContentType as parseConnectType } from "@connectrpc/connect/protocol-connect";
import { parseContentType as parseGrpcType } from "@connectrpc/connect/protocol-grpc";
import { parseContentType as parseGrpcWebType } from "@connectrpc/connect/protocol-grpc-web";
import { findCompression, isByteStream, withPlainBody } from "./body-bytes.js";
import { wrapHandler } from "../calls/handler-wrapper.js";

/** Why the binary body of a request could not be decoded; set by checkBinaryBody. */
const undecodableBody = createContextKey<string | undefined>(undefined, {
  description: "why a binary protobuf body could not be decoded",
});

/** How a binary body is framed: one plain message (Connect unary) or gRPC envelopes (gRPC, gRPC-Web). */
type Framing =
  { enveloped: false; encodingHeader: "content-encoding" } | { enveloped: true; encodingHeader: "grpc-encoding" };

/**
 * connect-es reports a binary protobuf body it cannot decode as `internal`
 * (its serialization's "parse binary" error, raised before any interceptor).
 * It is the caller's fault, so it is invalid_argument on Connect, gRPC and
 * gRPC-Web alike: the body is decoded here first, and an undecodable one is
 * handed on as an empty message with the reason beside it, which
 * undecodableBodyInterceptor turns into the error in each protocol's own form.
 * Framing, size and compression errors are left to connect's reader.
 */
export function checkBinaryBody(handler: UniversalHandler, readMaxBytes: number): UniversalHandler {
  // Only methods that take one message; a stream of requests is read as it comes.
  const kind = handler.method.methodKind;
  if (kind !== "unary" && kind !== "server_streaming") return handler;
  return wrapHandler(handler, async (req) => {
    const framing = framingOf(req.header.get("content-type"));
    if (req.method !== "POST" || framing === undefined || !isByteStream(req.body)) return handler(req);
    let bytes: Uint8Array;
    try {
      bytes = await readAllBytes(req.body, readMaxBytes, req.header.get("content-length"));
    } catch (error) {
      return handler({ ...req, body: failingBody(error) });
    }
    const reason = await decodeFailure(handler.method.input, bytes, framing, req.header, readMaxBytes);
    if (reason === undefined) return handler({ ...req, body: createAsyncIterable([bytes]) });
    const contextValues = req.contextValues ?? createContextValues();
    contextValues.set(undecodableBody, `the body could not be decoded as ${handler.method.input.typeName}: ${reason}`);
    const empty = framing.enveloped ? encodeEnvelope(0, new Uint8Array(0)) : new Uint8Array(0);
    return handler({ ...withPlainBody(req, empty, framing.encodingHeader), contextValues });
  });
}

/** Answers a request whose binary body could not be decoded with invalid_argument; before authentication, as for malformed JSON. */
export function undecodableBodyInterceptor(): Interceptor {
  return (next) => async (req) => {
    const reason = req.contextValues.get(undecodableBody);
    if (reason !== undefined) throw new ConnectError(reason, Code.InvalidArgument);
    return next(req);
  };
}

function framingOf(contentType: string | null): Framing | undefined {
  const connect = parseConnectType(contentType);
  if (connect)
    return connect.binary && !connect.stream ? { enveloped: false, encodingHeader: "content-encoding" } : undefined;
  const grpc = parseGrpcType(contentType) ?? parseGrpcWebType(contentType);
  const binary = grpc?.binary && !("text" in grpc && grpc.text);
  return binary ? { enveloped: true, encodingHeader: "grpc-encoding" } : undefined;
}

/** protobuf-es's reason when a message of the body does not decode; undefined when all do or the framing is for connect to judge. */
async function decodeFailure(
  input: DescMessage,
  bytes: Uint8Array,
  framing: Framing,
  header: Headers,
  readMaxBytes: number,
): Promise<string | undefined> {
  let messages: Uint8Array[];
  try {
    messages = await readMessages(bytes, framing, header.get(framing.encodingHeader), readMaxBytes);
  } catch {
    return undefined;
  }
  for (const message of messages) {
    try {
      fromBinary(input, message);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }
  return undefined;
}

async function readMessages(bytes: Uint8Array, framing: Framing, encoding: string | null, readMaxBytes: number) {
  const compression = findCompression(encoding);
  if (compression === undefined) throw new Error(`unknown encoding ${encoding}`);
  if (!framing.enveloped) return [compression ? await compression.decompress(bytes, readMaxBytes) : bytes];
  const single = compression ? undefined : onePlainEnvelope(bytes);
  if (single) return [single];
  const messages: Uint8Array[] = [];
  const envelopes = pipe(
    createAsyncIterable([bytes]),
    transformSplitEnvelope(readMaxBytes),
    transformDecompressEnvelope(compression, readMaxBytes),
  );
  for await (const envelope of envelopes) messages.push(envelope.data);
  return messages;
}

/**
 * The message of a body that is exactly one uncompressed envelope, as nearly every unary gRPC call is, read
 * without connect's stream of envelopes (a few async iterators a call); undefined for any other body.
 */
function onePlainEnvelope(bytes: Uint8Array): Uint8Array | undefined {
  if (bytes.length < 5 || bytes[0] !== 0) return undefined;
  const length = new DataView(bytes.buffer, bytes.byteOffset, 5).getUint32(1);
  return length === bytes.length - 5 ? bytes.subarray(5) : undefined;
}

async function* failingBody(error: unknown): AsyncIterable<Uint8Array> {
  yield* [];
  throw error;
}
