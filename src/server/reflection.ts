import {
  create,
  createFileRegistry,
  toBinary,
  type DescEnum,
  type DescFile,
  type DescMessage,
  type DescService,
  type FileRegistry,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import { ServerReflection as ServerReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** Both versions of gRPC server reflection: grpcurl and grpc-go ask v1 first, older clients only know v1alpha. */
export const REFLECTION_SERVICES: readonly DescService[] = [ServerReflectionV1, ServerReflectionV1alpha];

/** A reflection request as both versions define it (their messages differ only in package). */
interface ReflectionRequest {
  host: string;
  messageRequest:
    | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: Code; errorMessage: string } };

/**
 * Serves grpc.reflection.v1 and v1alpha ServerReflection for `services` and
 * itself, from the descriptors protobuf-es generated into gen/, so grpcurl and
 * other tools work without the proto files.
 */
export function registerReflection(router: ConnectRouter, services: readonly DescService[]): void {
  const descriptors = new DescriptorIndex([...services, ...REFLECTION_SERVICES]);
  async function* serverReflectionInfo<R extends ReflectionRequest>(requests: AsyncIterable<R>) {
    for await (const request of requests) {
      yield { validHost: request.host, originalRequest: request, messageResponse: descriptors.answer(request) };
    }
  }
  router.service(ServerReflectionV1, { serverReflectionInfo });
  router.service(ServerReflectionV1alpha, { serverReflectionInfo });
}

/** Every file the served services need, transitively, with the symbols each declares. */
class DescriptorIndex {
  private readonly registry: FileRegistry;
  private readonly fileBySymbol = new Map<string, DescFile>();
  private readonly serialized = new Map<DescFile, Uint8Array>();
  private readonly serviceNames: string[];

  constructor(services: readonly DescService[]) {
    this.serviceNames = [...new Set(services.map((s) => s.typeName))].sort();
    const files = dependenciesFirst(services.map((s) => s.file));
    this.registry = createFileRegistry(create(FileDescriptorSetSchema, { file: files.map((f) => f.proto) }));
    for (const file of this.registry.files) {
      this.serialized.set(file, toBinary(FileDescriptorProtoSchema, file.proto));
      for (const symbol of symbolsOf(file)) this.fileBySymbol.set(symbol, file);
    }
  }

  answer({ messageRequest: query }: ReflectionRequest): ReflectionAnswer {
    switch (query.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: this.serviceNames.map((name) => ({ name })) } };
      case "fileByFilename":
        return this.files(this.registry.getFile(query.value), `file not found: ${query.value}`);
      case "fileContainingSymbol":
        return this.files(this.fileBySymbol.get(query.value), `symbol not found: ${query.value}`);
      case "fileContainingExtension": {
        const { containingType, extensionNumber } = query.value;
        const extendee = this.registry.getMessage(containingType);
        const extension = extendee && this.registry.getExtensionFor(extendee, extensionNumber);
        return this.files(extension?.file, `extension not found: ${containingType} ${extensionNumber}`);
      }
      case "allExtensionNumbersOfType": {
        if (!this.registry.getMessage(query.value)) return notFound(`type not found: ${query.value}`);
        const numbers: number[] = [];
        for (const desc of this.registry) {
          if (desc.kind === "extension" && desc.extendee.typeName === query.value) numbers.push(desc.number);
        }
        return { case: "allExtensionNumbersResponse", value: { baseTypeName: query.value, extensionNumber: numbers } };
      }
      default:
        return { case: "errorResponse", value: { errorCode: Code.InvalidArgument, errorMessage: "empty request" } };
    }
  }

  /** The file first, then everything it imports, transitively, as real servers answer. */
  private files(file: DescFile | undefined, missing: string): ReflectionAnswer {
    if (!file) return notFound(missing);
    const closure = dependenciesFirst([file]).reverse();
    return {
      case: "fileDescriptorResponse",
      value: { fileDescriptorProto: closure.map((f) => this.serialized.get(f)!) },
    };
  }
}

function notFound(errorMessage: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage } };
}

/** `files` and their imports, each once, every file after the files it imports. */
function dependenciesFirst(files: readonly DescFile[]): DescFile[] {
  const ordered = new Map<string, DescFile>();
  const visit = (file: DescFile) => {
    if (ordered.has(file.proto.name)) return;
    file.dependencies.forEach(visit);
    ordered.set(file.proto.name, file);
  };
  files.forEach(visit);
  return [...ordered.values()];
}

/** The fully qualified name of everything `file` declares, members included (Service.Method, Message.field). */
function symbolsOf(file: DescFile): string[] {
  const symbols: string[] = [];
  const qualify = (scope: string, name: string) => (scope ? `${scope}.${name}` : name);
  // Enum values are scoped beside their enum, not inside it (C++ scoping rules).
  const addEnum = (e: DescEnum, scope: string) => {
    symbols.push(e.typeName, ...e.values.map((v) => qualify(scope, v.name)));
  };
  const addMessage = (m: DescMessage) => {
    symbols.push(m.typeName, ...[...m.fields, ...m.oneofs].map((member) => `${m.typeName}.${member.name}`));
    symbols.push(...m.nestedExtensions.map((x) => x.typeName));
    m.nestedEnums.forEach((e) => addEnum(e, m.typeName));
    m.nestedMessages.forEach(addMessage);
  };
  file.messages.forEach(addMessage);
  file.enums.forEach((e) => addEnum(e, file.proto.package));
  symbols.push(...file.extensions.map((x) => x.typeName));
  for (const service of file.services) {
    symbols.push(service.typeName, ...service.methods.map((m) => `${service.typeName}.${m.name}`));
  }
  return symbols;
}
