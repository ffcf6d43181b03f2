import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./support/raw-requests.js";
import { startTestService, type TestService } from "./support/service.js";

/** A binary protobuf body that cannot be decoded is the caller's fault on every protocol (issue 24, item 6). */

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
});
afterAll(() => svc.stop());

const PATH = "/platformapi.v1.PlayerService/Get";
// Field 1, length-delimited, with a length varint that never ends.
const MALFORMED = Uint8Array.from([0x0a, 0xff]);
const DECODE_MESSAGE = /^the body could not be decoded as platformapi\.v1\.GetRequest: /;

/** One gRPC message frame: uncompressed flag, big-endian length, the bytes. */
const frame = (message: Uint8Array) => Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);

/** A raw gRPC call over cleartext HTTP/2; resolves to its trailers. */
async function grpcCall(body: Buffer, headers: Record<string, string>): Promise<http2.IncomingHttpHeaders> {
  const session = http2.connect(svc.baseUrl);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": PATH,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    stream.end(body);
    stream.resume();
    return await new Promise((resolve, reject) => {
      stream.on("trailers", resolve);
      stream.on("error", reject);
    });
  } finally {
    session.close();
  }
}

/** A raw gRPC-Web call; resolves to the trailer frame at the end of its body, as header lines. */
async function grpcWebCall(body: Buffer): Promise<Record<string, string>> {
  const res = await fetch(svc.baseUrl + PATH, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+proto", "x-api-key": project.privateKey },
    body: new Uint8Array(body),
  });
  expect(res.status).toBe(200);
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(bytes[0]).toBe(0x80);
  const lines = bytes.subarray(5).toString("utf8").trim().split("\r\n");
  return Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()]),
  );
}

describe("an undecodable binary body", () => {
  it("is 400 invalid_argument on Connect, naming the message, plain or gzipped, whatever the key", async () => {
    for (const [body, headers] of [
      [MALFORMED, { "x-api-key": project.privateKey }],
      [gzipSync(MALFORMED), { "x-api-key": project.privateKey, "content-encoding": "gzip" }],
      [MALFORMED, {}],
    ] as const) {
      const res = await fetch(svc.baseUrl + PATH, {
        method: "POST",
        headers: { "content-type": "application/proto", ...headers },
        body: new Uint8Array(body),
      });
      const answer = { status: res.status, body: await res.json() };
      expectError(answer, 400, "invalid_argument");
      expect(answer.body.message).toMatch(DECODE_MESSAGE);
    }
  });

  it("is status 3 on gRPC", async () => {
    const trailers = await grpcCall(frame(MALFORMED), { "x-api-key": project.privateKey });
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(trailers["grpc-message"]))).toMatch(DECODE_MESSAGE);
  });

  it("is status 3 on gRPC-Web", async () => {
    const trailers = await grpcWebCall(frame(MALFORMED));
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(trailers["grpc-message"])).toMatch(DECODE_MESSAGE);
  });

  it("leaves a decodable binary body to the call: a well-formed request is answered as before", async () => {
    // An empty GetRequest decodes; it is then refused by the proto's rules, not as undecodable.
    const trailers = await grpcCall(frame(new Uint8Array(0)), { "x-api-key": project.privateKey });
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(trailers["grpc-message"]))).not.toMatch(DECODE_MESSAGE);
  });
});
