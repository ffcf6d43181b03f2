import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";

/** A Node request handler for HTTP/1.1 and HTTP/2 alike, as connect-node's adapter takes and returns it. */
export type NodeHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
export type NodeRequest = Parameters<NodeHandler>[0];
export type NodeResponse = Parameters<NodeHandler>[1];
