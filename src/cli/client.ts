import { once } from "node:events";
import { toJson, type DescMessage, type DescService, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Command, InvalidArgumentError } from "commander";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import { writeExplicitNulls } from "../server/bodies/json-nulls.js";

// What platformctl's commands share: the program and its options, the clients they call, how answers print.

export function positiveInteger(value: string): number {
  const id = Number(value);
  if (!Number.isInteger(id) || id <= 0) throw new InvalidArgumentError("a positive integer");
  return id;
}

export interface PageOptions {
  page?: number;
  pageSize?: number;
}

/** The paging options of a list command: the service's defaults (page 1, 50 a page) when left out. */
export function paged(command: Command): Command {
  return command
    .option("--page <n>", "page, from 1", positiveInteger)
    .option("--page-size <n>", "items a page, up to 100", positiveInteger);
}

export const program = new Command("platformctl")
  .description("Administer the platform backend: projects, API keys, entitlements, signing keys")
  .option(
    "--url <url>",
    "base URL of the service (env PLATFORM_URL)",
    process.env.PLATFORM_URL ?? "http://localhost:8080",
  )
  // No default shown for the keys: --help must never print a secret.
  .option("--admin-key <key>", "admin API key (default: env PLATFORM_ADMIN_KEY)")
  .option("--key <key>", "a project's API key, for project commands (default: env PLATFORM_API_KEY)");

/** A Connect transport to the service at --url. */
export function service() {
  const { url } = program.opts<{ url: string }>();
  return createConnectTransport({ baseUrl: url, httpVersion: "1.1" });
}

export function admin() {
  const adminKey: string =
    program.opts<{ adminKey?: string }>().adminKey ??
    process.env.PLATFORM_ADMIN_KEY ??
    program.error("an admin key is needed: --admin-key or PLATFORM_ADMIN_KEY");
  return { client: createClient(AdminService, service()), headers: { "x-api-key": adminKey } };
}

/** The project commands' client: the project is the key's (its private key to change, any reading key to list). */
export function project<Service extends DescService>(of: Service) {
  const key: string =
    program.opts<{ key?: string }>().key ??
    process.env.PLATFORM_API_KEY ??
    program.error("a project's API key is needed: --key or PLATFORM_API_KEY");
  return { client: createClient(of, service()), headers: { "x-api-key": key } };
}

/** The JSON of /v1: proto field names, defaults shown. */
const JSON_OPTIONS = { useProtoFieldName: true, alwaysEmitImplicit: true };

export async function print<Desc extends DescMessage>(schema: Desc, answer: Promise<MessageShape<Desc>>) {
  try {
    const json = writeExplicitNulls(schema, toJson(schema, await answer, JSON_OPTIONS));
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  } catch (error) {
    program.error(ConnectError.from(error).message, { exitCode: 1 });
  }
}

/** A server stream's messages as the NDJSON lines of /v1, written as they come (waiting while stdout is full). */
export async function printLines<Desc extends DescMessage>(schema: Desc, lines: AsyncIterable<MessageShape<Desc>>) {
  try {
    for await (const line of lines) {
      const json = writeExplicitNulls(schema, toJson(schema, line, JSON_OPTIONS));
      if (!process.stdout.write(`${JSON.stringify(json)}\n`)) await once(process.stdout, "drain");
    }
  } catch (error) {
    program.error(ConnectError.from(error).message, { exitCode: 1 });
  }
}

/** Repeatable options gather their values. */
export const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Text as JSON when it reads as JSON, else as the text itself. */
export function jsonOrText(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}

/** `key=value`: the value as JSON when it reads as a number, boolean or quoted string, else as text. */
export function traitsOf(pairs: readonly string[]): Record<string, JsonValue> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf("=");
      if (at <= 0) program.error(`--trait ${pair}: expected key=value`);
      const value = jsonOrText(pair.slice(at + 1));
      return [pair.slice(0, at), typeof value === "object" ? pair.slice(at + 1) : value];
    }),
  );
}

export interface PlayerOptions {
  partner?: string;
  device?: string;
}

/** A players command's player: --partner or --device, exactly one. */
export function playerOf(o: PlayerOptions): { partnerUserId: string } | { deviceId: string } {
  if ((o.partner === undefined) === (o.device === undefined)) program.error("name the player: --partner or --device");
  return o.partner !== undefined ? { partnerUserId: o.partner } : { deviceId: o.device! };
}
