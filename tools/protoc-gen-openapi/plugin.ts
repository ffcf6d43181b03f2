import { create, createFileRegistry } from "@bufbuild/protobuf";
import {
  CodeGeneratorResponse_Feature,
  CodeGeneratorResponseSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import type { Plugin } from "@bufbuild/protoplugin";
import { buildDocument } from "./document.js";

const INFO = {
  title: "Platform API",
  version: "1",
  description: [
    "The HTTP/JSON face of the service's gRPC API, generated from its proto files (proto/platformapi/v1).",
    "Answers use the proto field names; requests may use them or the JSON names. Every field of an answer is present:",
    "implicit defaults are written (`valid: false`, `rejected: []`), and a field with explicit presence that is unset",
    "is `null`. 64-bit integers are written as decimal strings. Errors are `{code, message}` with an HTTP status.",
  ].join(" "),
};

/**
 * protoc-gen-openapi: writes openapi.json for the services of the files to generate (run with strategy: all).
 * The option `package=<name>` keeps only the files of that proto package: the API the /v1 gateway serves, not
 * the vendored gRPC services (reflection, health) beside it.
 */
export const openapiPlugin: Plugin = {
  name: "protoc-gen-openapi",
  version: "1",
  run(request) {
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
    const apiPackage = /(?:^|,)package=([^,]+)/.exec(request.parameter)?.[1];
    const services = request.fileToGenerate
      .map((name) => registry.getFile(name))
      .filter((file) => file !== undefined && (apiPackage === undefined || file.proto.package === apiPackage))
      .flatMap((file) => file!.services);
    const file =
      services.length === 0 ? [] : [{ name: "openapi.json", content: toJson(buildDocument(services, INFO)) }];
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file,
    });
  },
};

function toJson(document: unknown): string {
  return JSON.stringify(document, null, 2) + "\n";
}
