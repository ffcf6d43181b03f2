import type { DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  createAsyncIterable,
  encodeEnvelope,
  pipe,
  transformSplitEnvelope,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { Code } from "@connectrpc/connect";
import { codeFromString, codeToHttpStatus, endStreamFlag } from "@connectrpc/connect/protocol-connect";
import { universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { writeExplicitNulls } from "../bodies/json-nulls.js";
import { sendJson } from "./http-errors.js";
import type { NodeResponse } from "./node-types.js";

/** The Connect streaming call the gateway makes for a server-streaming method: one enveloped JSON request. */
export const streamingRequest = {
  contentType: "application/connect+json",
  body: (json: JsonObject) => createAsyncIterable([encodeEnvelope(0, new TextEncoder().encode(JSON.stringify(json)))]),
};

interface EndStream {
  error?: { code: string; message?: string };
  metadata?: Record<string, string[]>;
}

/**
 * Writes a Connect JSON stream of messages as NDJSON: one message's JSON a
 * line, each written as the handler produces it and the next pulled only once
 * the socket took the last (backpressure). An error before the first line is
 * answered as a unary call's (its status and `{code, message}`); after it the
 * socket is destroyed, so the client sees the chunked body cut short, never a
 * complete one. A client that goes away stops the pull: the handler's stream
 * is returned and the call's signal aborted.
 */
export async function writeNdjson(response: UniversalServerResponse, res: NodeResponse, output: DescMessage) {
  if (response.status !== 200 || response.body === undefined) {
    await universalResponseToNodeResponse(response, res);
    return;
  }
  const decoder = new TextDecoder();
  let started = false;
  // Set by the response's close (HTTP/1.1 and HTTP/2 alike): the client went away, or the answer is over.
  let closed = false;
  res.once("close", () => (closed = true));
  for await (const envelope of pipe(response.body, transformSplitEnvelope(Number.MAX_SAFE_INTEGER))) {
    if (closed) return;
    const json = JSON.parse(decoder.decode(envelope.data)) as JsonValue;
    if ((envelope.flags & endStreamFlag) === endStreamFlag) {
      const { error, metadata } = json as EndStream;
      if (!error) break;
      if (started) {
        res.destroy();
        return;
      }
      for (const [name, values] of Object.entries(metadata ?? {})) res.setHeader(name, values);
      sendJson(res, codeToHttpStatus(codeFromString(error.code) ?? Code.Unknown), error);
      return;
    }
    if (!started) started = begin(res);
    if (!res.write(JSON.stringify(writeExplicitNulls(output, json)) + "\n")) await drained(res);
  }
  if (!started) begin(res);
  res.end();
}

function begin(res: NodeResponse): true {
  res.statusCode = 200;
  res.setHeader("content-type", "application/x-ndjson");
  return true;
}

/** Until the socket takes more, or closes (the loop then stops). */
function drained(res: NodeResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
