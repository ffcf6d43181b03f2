import { getOption, hasOption, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import { required_scope as requiredScope } from "../../gen/platformapi/v1/options_pb.js";
import type { JsonSchema } from "./json-schema.js";
import { acceptsEmptyObject, describedBy, MessageSchemas } from "./schemas.js";

export interface DocumentInfo {
  title: string;
  version: string;
  description: string;
}

const JSON_TYPE = "application/json";
const NDJSON_TYPE = "application/x-ndjson";
const ERROR_RESPONSE = { $ref: "#/components/responses/Error" };

/** The status codes of Connect (and gRPC), as the `code` of an error body. */
const ERROR_CODES = [
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
];

/**
 * The OpenAPI 3.1 document of the /v1 JSON API of `services`: one operation
 * per method, at the path of its google.api.http annotation, as the gateway
 * (src/server/http/http-gateway.ts) serves it.
 */
export function buildDocument(services: readonly DescService[], info: DocumentInfo): Record<string, unknown> {
  const methods = services.flatMap((service) => service.methods);
  const schemas = new MessageSchemas(
    methods.filter((method) => route(method).verb === "post").map((method) => method.input),
    methods.map((method) => method.output),
  );
  const paths: Record<string, Record<string, unknown>> = {};
  for (const method of methods) {
    const { path, verb } = route(method);
    if (paths[path]?.[verb]) throw new Error(`${path}: two methods have ${verb}`);
    paths[path] = { ...paths[path], [verb]: operation(method, verb, schemas) };
  }
  return {
    openapi: "3.1.0",
    info,
    tags: services.map((service) => ({ name: service.name, ...describedBy(service) })),
    paths,
    components: {
      schemas: { ...schemas.components(), Error: errorSchema() },
      responses: {
        Error: {
          description: "The request failed; nothing was changed unless the message says otherwise.",
          headers: {
            "Retry-After": {
              description: "With 429: seconds to wait before trying again.",
              schema: { type: "integer", minimum: 0 },
            },
          },
          content: { [JSON_TYPE]: { schema: { $ref: "#/components/schemas/Error" } } },
        },
      },
      securitySchemes: {
        ApiKey: {
          type: "apiKey",
          in: "header",
          name: "X-Api-Key",
          description: "An API key; each operation names the scope its key must hold.",
        },
      },
    },
  };
}

/** The path and verb the gateway serves a method at; shapes the gateway does not serve are refused. */
function route(method: DescMethod): { path: string; verb: "get" | "post" } {
  const name = `${method.parent.typeName}.${method.name}`;
  if (!hasOption(method, httpRule)) throw new Error(`${name} has no google.api.http annotation`);
  const rule = getOption(method, httpRule);
  const { case: verb, value: path } = rule.pattern;
  if ((verb !== "get" && verb !== "post") || typeof path !== "string") {
    throw new Error(`${name}: the /v1 gateway serves only get and post`);
  }
  if (path.includes("{") || rule.additionalBindings.length > 0 || rule.responseBody !== "") {
    throw new Error(`${name}: the /v1 gateway serves no path variables, additional bindings or response_body`);
  }
  if (rule.body !== (verb === "post" ? "*" : "")) {
    throw new Error(`${name}: a post takes body "*" and a get no body`);
  }
  return { path, verb };
}

function operation(method: DescMethod, verb: "get" | "post", schemas: MessageSchemas): Record<string, unknown> {
  const service = method.parent;
  const scope = getOption(method, requiredScope);
  if (scope === "") throw new Error(`${service.typeName}.${method.name} has no platformapi.v1.required_scope`);
  const comment = describedBy(method).description ?? "";
  const access = scope === "public" ? "Needs no API key." : `Needs an API key with the scope \`${scope}\`.`;
  return {
    operationId: `${service.name}_${method.name}`,
    summary: firstSentence(comment) || `${service.name}.${method.name}`,
    description: [comment, access].filter((part) => part !== "").join("\n\n"),
    tags: [service.name],
    "x-required-scope": scope,
    // OpenAPI 3.1 lets an apiKey requirement list the roles it needs: here the key's scope.
    security: scope === "public" ? [] : [{ ApiKey: [scope] }],
    ...(verb === "post"
      ? {
          requestBody: {
            description:
              "A JSON object in UTF-8, sent as application/json or with no Content-Type (any other type is " +
              "answered 415); an empty body is the same as {}.",
            required: !acceptsEmptyObject(method.input),
            content: { [JSON_TYPE]: { schema: schemas.ref(method.input, "input") } },
          },
        }
      : {}),
    responses: {
      "200": answer(method, schemas),
      "4XX": ERROR_RESPONSE,
      "5XX": ERROR_RESPONSE,
    },
  };
}

/** One message as JSON, or for a server-streaming method one message's JSON a line (the gateway's NDJSON). */
function answer(method: DescMethod, schemas: MessageSchemas) {
  const schema = schemas.ref(method.output, "output");
  if (method.methodKind !== "server_streaming") {
    return { description: `A ${method.output.typeName}.`, content: { [JSON_TYPE]: { schema } } };
  }
  return {
    description:
      `A stream of ${method.output.typeName}, one JSON object a line, written as produced. An error before ` +
      "the first line is answered as any other; after it the connection is closed without the chunked " +
      "encoding's last chunk, so a client sees a truncated body rather than a complete one.",
    // OpenAPI 3.1 has no item schema for a sequence: the schema is each line's.
    content: { [NDJSON_TYPE]: { schema } },
  };
}

function errorSchema(): JsonSchema {
  return {
    type: "object",
    description: "The body of every error on every protocol's JSON: a status code and a message naming the cause.",
    properties: {
      code: { type: "string", enum: ERROR_CODES },
      message: { type: "string" },
    },
    required: ["code", "message"],
    additionalProperties: false,
  };
}

function firstSentence(text: string): string {
  const match = /^(.+?[.!?])(\s|$)/s.exec(text);
  return (match ? match[1] : text).replace(/\s+/g, " ").trim();
}
