import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  createEndStreamSerialization,
  endStreamFlag,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import type { NodeRequest, NodeResponse } from "./node-types.js";

/** An RPC path: /package.Service/Method. */
const PROCEDURE_PATH = /^\/([^/]+)\/([^/]+)$/;

/**
 * Answers a call of a procedure this server does not serve in the protocol the
 * caller speaks, told by its content type: gRPC and gRPC-Web get status 12
 * (unimplemented) with proper trailers, Connect its error JSON with the HTTP
 * status Connect maps unimplemented to (501). Anything else is no RPC: the
 * function returns false and the caller answers it as plain HTTP.
 */
export function createUnknownRpcResponder(services: readonly DescService[]) {
  const served = new Set(services.map((s) => s.typeName));

  const errorFor = (path: string): ConnectError => {
    const [, service, method] = PROCEDURE_PATH.exec(path) ?? [];
    let message = `no procedure ${path}`;
    if (service)
      message = served.has(service) ? `unknown method ${method} for service ${service}` : `unknown service ${service}`;
    return new ConnectError(message, Code.Unimplemented);
  };

  return function answerUnknownRpc(req: NodeRequest, res: NodeResponse, path: string): boolean {
    const contentType = req.headers["content-type"] ?? "";
    switch (rpcProtocol(req, path)) {
      case "grpc":
        sendGrpc(res, contentType, errorFor(path));
        return true;
      case "grpc-web":
        sendGrpcWeb(res, contentType, errorFor(path));
        return true;
      case "connect-stream":
        sendConnectStream(res, contentType, errorFor(path));
        return true;
      case "connect-unary":
        sendConnectUnary(res, errorFor(path));
        return true;
      default:
        return false;
    }
  };
}

/**
 * The RPC protocol a request speaks. gRPC and Connect streams are told by their
 * content types alone; a Connect unary call has JSON or proto content (or is a
 * GET with an encoding parameter) on a /package.Service/Method path.
 */
function rpcProtocol(
  req: NodeRequest,
  path: string,
): "grpc" | "grpc-web" | "connect-stream" | "connect-unary" | undefined {
  const contentType = (req.headers["content-type"] ?? "").toLowerCase();
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/grpc")) return "grpc";
  if (contentType.startsWith("application/connect+")) return "connect-stream";
  if (!PROCEDURE_PATH.test(path)) return undefined;
  const mediaType = contentType.split(";", 1)[0].trim();
  if (req.method === "POST" && (mediaType === "application/json" || mediaType === "application/proto")) {
    return "connect-unary";
  }
  const query = new URLSearchParams((req.url ?? "").split("?")[1] ?? "");
  if (req.method === "GET" && query.has("encoding")) return "connect-unary";
  return undefined;
}

/** Trailers-only: the status travels in the one HEADERS frame, which ends the stream. */
function sendGrpc(res: NodeResponse, contentType: string, error: ConnectError): void {
  res.statusCode = 200;
  res.setHeader("content-type", contentType);
  setTrailerStatus(new Headers(), error).forEach((value, name) => res.setHeader(name, value));
  res.end();
}

/** gRPC-Web carries the status in a trailer frame of the body (base64 for the -text variant). */
function sendGrpcWeb(res: NodeResponse, contentType: string, error: ConnectError): void {
  const frame = encodeEnvelope(trailerFlag, trailerSerialize(setTrailerStatus(new Headers(), error)));
  const body = contentType.startsWith("application/grpc-web-text") ? Buffer.from(frame).toString("base64") : frame;
  res.statusCode = 200;
  res.setHeader("content-type", contentType);
  res.end(body);
}

function sendConnectUnary(res: NodeResponse, error: ConnectError): void {
  const body = errorToJsonBytes(error, undefined);
  res.statusCode = codeToHttpStatus(error.code);
  res.setHeader("content-type", "application/json");
  res.setHeader("content-length", body.length);
  res.end(body);
}

/** A Connect stream answers HTTP 200 and ends with an end-stream message that carries the error. */
function sendConnectStream(res: NodeResponse, contentType: string, error: ConnectError): void {
  const endStream = createEndStreamSerialization(undefined).serialize({ metadata: new Headers(), error });
  res.statusCode = 200;
  res.setHeader("content-type", contentType);
  res.end(encodeEnvelope(endStreamFlag, endStream));
}
