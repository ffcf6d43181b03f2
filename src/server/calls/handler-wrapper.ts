import { Code, ConnectError } from "@connectrpc/connect";
import {
  createAsyncIterable,
  type UniversalHandler,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";

/** `serve` in the place of `handler`, keeping what the router reads of a handler (its method, path, protocols). */
export function wrapHandler(
  handler: UniversalHandler,
  serve: (req: UniversalServerRequest) => Promise<UniversalServerResponse>,
): UniversalHandler {
  return Object.assign(serve, {
    protocolNames: handler.protocolNames,
    service: handler.service,
    method: handler.method,
    requestPath: handler.requestPath,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
  });
}

/** An error as the Connect protocol answers it: {code, message} JSON, with the HTTP status of its code unless given. */
export function errorResponse(error: ConnectError, status = codeToHttpStatus(error.code)): UniversalServerResponse {
  return {
    status,
    header: new Headers({ "content-type": "application/json" }),
    body: createAsyncIterable([errorToJsonBytes(error, {})]),
  };
}

/**
 * An RPC path asked with a method its protocols do not take (GET, PUT...):
 * 405 with an Allow header and a {code, message} body, as the /v1 gateway answers, not connect's empty 405.
 */
export function methodNotAllowedBody(handler: UniversalHandler): UniversalHandler {
  return wrapHandler(handler, async (req) => {
    if (handler.allowedMethods.includes(req.method)) return handler(req);
    const allowed = handler.allowedMethods.join(", ");
    const error = new ConnectError(`${handler.requestPath} takes ${allowed}, not ${req.method}`, Code.InvalidArgument);
    const res = errorResponse(error, 405);
    res.header!.set("allow", allowed);
    return res;
  });
}
