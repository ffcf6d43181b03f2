import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { createAsyncIterable, type Compression, type UniversalServerRequest } from "@connectrpc/connect/protocol";

const COMPRESSIONS = [compressionGzip, compressionBrotli];

export const isByteStream = (body: UniversalServerRequest["body"]): body is AsyncIterable<Uint8Array> =>
  typeof body === "object" && body !== null && Symbol.asyncIterator in body;

/** The compression an encoding header names: null for none ("identity" or no header), undefined for one the service does not speak. */
export function findCompression(encoding: string | null): Compression | null | undefined {
  if (encoding === null || encoding === "identity") return null;
  return COMPRESSIONS.find((c) => c.name === encoding);
}

/** The request with another body, sent plain: the original's length and encoding header no longer apply. */
export function withPlainBody(
  req: UniversalServerRequest,
  body: Uint8Array,
  encodingHeader: "content-encoding" | "grpc-encoding",
): UniversalServerRequest {
  const header = new Headers(req.header);
  header.delete(encodingHeader);
  header.delete("content-length");
  return { ...req, header, body: createAsyncIterable([body]) };
}
