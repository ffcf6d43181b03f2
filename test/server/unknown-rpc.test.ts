import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http2 from "node:http2";
import os from "node:os";
import path from "node:path";
import { create, createFileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, file_google_protobuf_empty } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureGrpcurl, grpcurlUnavailable, runGrpcurl } from "../support/clients/grpcurl.js";
import { startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

/**
 * What a client built from a newer or foreign proto knows and this server does
 * not: a method the served LaunchTokenService lacks, and a whole service.
 */
const PROTO = `syntax = "proto3";
package platformapi.v1;
import "google/protobuf/empty.proto";
service LaunchTokenService {
  rpc Nope(google.protobuf.Empty) returns (google.protobuf.Empty);
}
service MissingService {
  rpc Call(google.protobuf.Empty) returns (google.protobuf.Empty);
  rpc Follow(google.protobuf.Empty) returns (stream google.protobuf.Empty);
}
`;
const empty = ".google.protobuf.Empty";
const registry = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "test/missing.proto",
    package: "platformapi.v1",
    syntax: "proto3",
    dependency: ["google/protobuf/empty.proto"],
    service: [
      { name: "LaunchTokenService", method: [{ name: "Nope", inputType: empty, outputType: empty }] },
      {
        name: "MissingService",
        method: [
          { name: "Call", inputType: empty, outputType: empty },
          { name: "Follow", inputType: empty, outputType: empty, serverStreaming: true },
        ],
      },
    ],
  }),
  () => file_google_protobuf_empty,
);
const NewerLaunch = registry.getService("platformapi.v1.LaunchTokenService")!;
const Missing = registry.getService("platformapi.v1.MissingService")!;

const UNKNOWN_METHOD = "unknown method Nope for service platformapi.v1.LaunchTokenService";
const UNKNOWN_SERVICE = "unknown service platformapi.v1.MissingService";

type AnyClient = Record<string, (input: object) => unknown>;

/** Calls `method` (unary or server-streaming) with an empty message and returns the error it fails with. */
async function failure(client: AnyClient, method: string): Promise<ConnectError> {
  try {
    const result = client[method]({});
    if (typeof result === "object" && result !== null && Symbol.asyncIterator in result) {
      for await (const _ of result as AsyncIterable<unknown>) void _;
    } else {
      await result;
    }
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error(`${method} succeeded`);
}

const CALLS = [
  [NewerLaunch, "nope", UNKNOWN_METHOD],
  [Missing, "call", UNKNOWN_SERVICE],
  [Missing, "follow", UNKNOWN_SERVICE],
] as const;

describe("an unknown method or service gets its protocol's unimplemented", () => {
  it.each(["grpc", "grpc-web", "connect"] as const)("through a %s client", async (protocol) => {
    for (const [service, method, message] of CALLS) {
      const error = await failure(test.client(service, protocol) as unknown as AnyClient, method);
      expect(error, `${service.typeName}.${method}`).toMatchObject({ code: Code.Unimplemented, rawMessage: message });
    }
  });

  it("through a binary Connect client", async () => {
    const transport = createConnectTransport({ baseUrl: test.baseUrl, httpVersion: "1.1", useBinaryFormat: true });
    for (const [service, method, message] of CALLS) {
      const error = await failure(createClient(service, transport) as unknown as AnyClient, method);
      expect(error, `${service.typeName}.${method}`).toMatchObject({ code: Code.Unimplemented, rawMessage: message });
    }
  });

  it("is a trailers-only gRPC answer: HTTP 200 and grpc-status 12 in the one HEADERS frame", async () => {
    const session = http2.connect(test.baseUrl);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/platformapi.v1.LaunchTokenService/Nope",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.end(Buffer.alloc(5)); // one empty message
      const [headers, flags] = (await new Promise((resolve) => stream.once("response", (h, f) => resolve([h, f])))) as [
        http2.IncomingHttpHeaders,
        number,
      ];
      expect(headers).toMatchObject({
        ":status": 200,
        "content-type": "application/grpc",
        "grpc-status": "12",
        "grpc-message": encodeURIComponent(UNKNOWN_METHOD),
      });
      expect(flags & http2.constants.NGHTTP2_FLAG_END_STREAM).toBeTruthy();
    } finally {
      session.close();
    }
  });

  it("carries gRPC-Web's status in the body's trailer frame", async () => {
    for (const contentType of ["application/grpc-web+proto", "application/grpc-web-text"]) {
      const res = await fetch(`${test.baseUrl}/platformapi.v1.MissingService/Call`, {
        method: "POST",
        headers: { "content-type": contentType },
        body: contentType.endsWith("text") ? "AAAAAAA=" : new Uint8Array(5),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(contentType);
      const raw = Buffer.from(await res.arrayBuffer());
      const body = contentType.endsWith("text") ? Buffer.from(raw.toString(), "base64") : raw;
      expect(body[0]).toBe(0x80); // the trailer flag
      expect(body.readUInt32BE(1)).toBe(body.length - 5);
      expect(body.subarray(5).toString()).toBe(
        `grpc-message: ${encodeURIComponent(UNKNOWN_SERVICE)}\r\ngrpc-status: 12\r\n`,
      );
    }
  });

  it("answers Connect unary calls, POST and GET, with HTTP 501 and Connect's error JSON", async () => {
    const post = await fetch(`${test.baseUrl}/platformapi.v1.MissingService/Call`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      body: "{}",
    });
    const get = await fetch(
      `${test.baseUrl}/platformapi.v1.MissingService/Call?connect=v1&encoding=json&message=%7B%7D`,
    );
    for (const res of [post, get]) {
      expect(res.status).toBe(501);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(await res.json()).toEqual({ code: "unimplemented", message: UNKNOWN_SERVICE });
    }
  });

  it("keeps the JSON 404 for unknown /v1 paths and plain HTTP", async () => {
    const v1 = await test.postJson("/v1/nope", {});
    expect(v1).toMatchObject({ status: 404, body: { code: "not_found", message: "no endpoint /v1/nope" } });
    const plain = await fetch(`${test.baseUrl}/nope`);
    expect(plain.status).toBe(404);
    expect(await plain.json()).toEqual({ code: "not_found", message: "no endpoint /nope" });
  });
});

const noGrpcurl = await grpcurlUnavailable();
if (noGrpcurl) process.stderr.write(`skipping the grpcurl unknown-method test: ${noGrpcurl}\n`);

describe.skipIf(noGrpcurl)("grpcurl (grpc-go) calling what the server lacks", () => {
  let protoDir: string;
  afterAll(() => rm(protoDir, { recursive: true, force: true }));

  it("sees Unimplemented with the server's message", async () => {
    const binary = await ensureGrpcurl();
    protoDir = await mkdtemp(path.join(os.tmpdir(), "platform-missing-proto-"));
    await writeFile(path.join(protoDir, "missing.proto"), PROTO);
    const call = (method: string) =>
      runGrpcurl(binary, {
        address: `127.0.0.1:${test.service.port}`,
        command: [method],
        flags: ["-import-path", protoDir, "-proto", "missing.proto"],
      });
    for (const [method, message] of [
      ["platformapi.v1.LaunchTokenService/Nope", UNKNOWN_METHOD],
      ["platformapi.v1.MissingService/Call", UNKNOWN_SERVICE],
    ]) {
      const result = await call(method);
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr).toContain("Code: Unimplemented");
      expect(result.stderr).toContain(`Message: ${message}`);
    }
  });
});
