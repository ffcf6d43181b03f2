import { fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ServerReflection as ServerReflectionV1,
  type ServerReflectionRequestSchema,
  type ServerReflectionResponse,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { ensureGrpcurl, grpcurlUnavailable, runGrpcurl } from "../support/clients/grpcurl.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

const SERVED = [
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
  "platformapi.v1.AdminService",
  "platformapi.v1.ConfigService",
  "platformapi.v1.EventService",
  "platformapi.v1.ExperimentService",
  "platformapi.v1.LaunchTokenService",
  "platformapi.v1.PlayerService",
  "platformapi.v1.ProjectService",
];

type Query = MessageInitShape<typeof ServerReflectionRequestSchema>["messageRequest"];

/**
 * Sends `queries` on one ServerReflectionInfo stream over gRPC, without an API
 * key, and returns the answers. The two versions differ only in package, so
 * the v1alpha service is driven through the v1 types; its path is v1alpha's.
 */
async function reflect(service: typeof ServerReflectionV1, queries: Query[]): Promise<ServerReflectionResponse[]> {
  async function* requests() {
    for (const messageRequest of queries) yield { host: "reflection-test", messageRequest };
  }
  const answers: ServerReflectionResponse[] = [];
  for await (const answer of test.client(service, "grpc").serverReflectionInfo(requests())) answers.push(answer);
  return answers;
}

function decodedFiles(answer: ServerReflectionResponse): FileDescriptorProto[] {
  if (answer.messageResponse.case !== "fileDescriptorResponse") {
    throw new Error(`expected files, got ${JSON.stringify(answer.messageResponse)}`);
  }
  return answer.messageResponse.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
}

/** The answer carries every file that any of its files imports. */
function expectClosed(files: FileDescriptorProto[]): void {
  const names = new Set(files.map((f) => f.name));
  for (const file of files) for (const dependency of file.dependency) expect(names).toContain(dependency);
  expect(names.size).toBe(files.length);
}

const versions = [
  { version: "v1", service: ServerReflectionV1 },
  { version: "v1alpha", service: ServerReflectionV1alpha as unknown as typeof ServerReflectionV1 },
];

describe.each(versions)("grpc.reflection.$version over a Connect gRPC client", ({ service }) => {
  it("lists every served service, itself and the other version included", async () => {
    const [answer] = await reflect(service, [{ case: "listServices", value: "" }]);
    expect(answer.messageResponse.case).toBe("listServicesResponse");
    expect(answer.messageResponse.value).toMatchObject({ service: SERVED.map((name) => ({ name })) });
  });

  it("answers a symbol with its file first, then every file it imports, transitively", async () => {
    const [answer] = await reflect(service, [
      { case: "fileContainingSymbol", value: "platformapi.v1.LaunchTokenService.Verify" },
    ]);
    const files = decodedFiles(answer);
    expect(files[0].name).toBe("platformapi/v1/launch.proto");
    expect(files[0].service[0]).toMatchObject({ name: "LaunchTokenService" });
    expect(files.map((f) => f.name).sort()).toEqual([
      "buf/validate/validate.proto",
      "google/api/annotations.proto",
      "google/api/http.proto",
      "google/protobuf/descriptor.proto",
      "google/protobuf/duration.proto",
      "google/protobuf/field_mask.proto",
      "google/protobuf/struct.proto",
      "google/protobuf/timestamp.proto",
      "platformapi/v1/launch.proto",
      "platformapi/v1/options.proto",
    ]);
    expectClosed(files);
  });

  it("finds files by name, by nested symbol and by extension", async () => {
    const answers = await reflect(service, [
      { case: "fileByFilename", value: "platformapi/v1/players.proto" },
      { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckResponse.ServingStatus" },
      { case: "fileContainingSymbol", value: "platformapi.v1.IssueRequest.platform_user_id" },
      {
        case: "fileContainingExtension",
        value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 51001 },
      },
    ]);
    expect(answers.map((a) => decodedFiles(a)[0].name)).toEqual([
      "platformapi/v1/players.proto",
      "grpc/health/v1/health.proto",
      "platformapi/v1/launch.proto",
      "platformapi/v1/options.proto",
    ]);
    answers.forEach((a) => expectClosed(decodedFiles(a)));
    // Each answer names the request it answers, in order, on the one stream.
    expect(answers.map((a) => a.originalRequest?.messageRequest.case)).toEqual([
      "fileByFilename",
      "fileContainingSymbol",
      "fileContainingSymbol",
      "fileContainingExtension",
    ]);
    expect(answers.every((a) => a.validHost === "reflection-test")).toBe(true);
  });

  it("lists the extension numbers of a type", async () => {
    const [answer] = await reflect(service, [
      { case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" },
    ]);
    expect(answer.messageResponse.case).toBe("allExtensionNumbersResponse");
    const value = answer.messageResponse.value as { baseTypeName: string; extensionNumber: number[] };
    expect(value.baseTypeName).toBe("google.protobuf.MethodOptions");
    // platformapi.v1.required_scope and google.api.http.
    expect([...value.extensionNumber].sort()).toEqual([51001, 72295728]);
  });

  it("answers unknown names with an error_response and keeps the stream open", async () => {
    const answers = await reflect(service, [
      { case: "fileContainingSymbol", value: "platformapi.v1.Nope" },
      { case: "fileByFilename", value: "nope.proto" },
      {
        case: "fileContainingExtension",
        value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 1 },
      },
      { case: "allExtensionNumbersOfType", value: "platformapi.v1.Nope" },
      { case: "listServices", value: "" },
    ]);
    expect(answers.slice(0, 4).map((a) => a.messageResponse)).toEqual([
      {
        case: "errorResponse",
        value: expect.objectContaining({ errorCode: 5, errorMessage: "symbol not found: platformapi.v1.Nope" }),
      },
      {
        case: "errorResponse",
        value: expect.objectContaining({ errorCode: 5, errorMessage: "file not found: nope.proto" }),
      },
      { case: "errorResponse", value: expect.objectContaining({ errorCode: 5 }) },
      { case: "errorResponse", value: expect.objectContaining({ errorCode: 5 }) },
    ]);
    expect(answers[4].messageResponse.case).toBe("listServicesResponse");
  });
});

const noGrpcurl = await grpcurlUnavailable();
if (noGrpcurl) process.stderr.write(`skipping the grpcurl tests: ${noGrpcurl}\n`);

describe.skipIf(noGrpcurl)("grpcurl, without the proto files", () => {
  let binary: string;
  beforeAll(async () => {
    binary = await ensureGrpcurl();
  });
  const grpcurl = (command: string[], flags: string[] = []) =>
    runGrpcurl(binary, { address: `127.0.0.1:${test.service.port}`, command, flags });

  it("lists the services and a service's methods", async () => {
    const services = await grpcurl(["list"]);
    expect(services).toMatchObject({ exitCode: 0, stderr: "" });
    expect(services.stdout.trim().split("\n")).toEqual(SERVED);

    const methods = await grpcurl(["list", "platformapi.v1.LaunchTokenService"]);
    expect(methods.stdout.trim().split("\n")).toEqual([
      "platformapi.v1.LaunchTokenService.GetJwks",
      "platformapi.v1.LaunchTokenService.Issue",
      "platformapi.v1.LaunchTokenService.Verify",
    ]);
  });

  it("describes services, methods with their options, and messages", async () => {
    const service = await grpcurl(["describe", "platformapi.v1.LaunchTokenService"]);
    expect(service.exitCode).toBe(0);
    expect(service.stdout).toContain("platformapi.v1.LaunchTokenService is a service:");
    expect(service.stdout).toContain(
      "rpc Verify ( .platformapi.v1.VerifyRequest ) returns ( .platformapi.v1.VerifyResponse )",
    );
    expect(service.stdout).toContain('option (.platformapi.v1.required_scope) = "launch:verify";');
    expect(service.stdout).toContain('option (.google.api.http) = { post: "/v1/launch_tokens/verify", body: "*" };');

    const message = await grpcurl(["describe", "platformapi.v1.IssueResponse"]);
    expect(message.stdout).toContain("platformapi.v1.IssueResponse is a message:");
    expect(message.stdout).toContain(".google.protobuf.Timestamp expires_at = 2;");
    expect(message.stdout).toContain("map<string, string> env = 3;");

    const missing = await grpcurl(["describe", "platformapi.v1.Nope"]);
    expect(missing.exitCode).not.toBe(0);
    expect(missing.stderr).toContain("Symbol not found: platformapi.v1.Nope");
  });

  it("calls a method from the reflected descriptors alone", async () => {
    const gameId = 900_000_000 + Math.floor(Math.random() * 1_000_000);
    const created = await grpcurl(
      ["platformapi.v1.AdminService/CreateProject"],
      ["-H", `x-api-key: ${ADMIN_KEY}`, "-d", JSON.stringify({ name: "Via grpcurl", game_id: gameId })],
    );
    expect(created).toMatchObject({ exitCode: 0, stderr: "" });
    expect(JSON.parse(created.stdout).project).toMatchObject({ name: "Via grpcurl", gameId });
  });
});
