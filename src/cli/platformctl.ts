import { once } from "node:events";
import {
  toJson,
  type DescMessage,
  type DescService,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Command, InvalidArgumentError } from "commander";
import {
  AdminService,
  CreateApiKeyResponseSchema,
  CreateProjectResponseSchema,
  ListApiKeysResponseSchema,
  ListEntitlementsResponseSchema,
  ListProjectsResponseSchema,
  RevokeApiKeyResponseSchema,
  RotateSigningKeyResponseSchema,
  SetEntitlementResponseSchema,
} from "../../gen/platformapi/v1/admin_pb.js";
import {
  EventService,
  ListPropertiesResponseSchema,
  UpdatePropertyResponseSchema,
} from "../../gen/platformapi/v1/events_pb.js";
import { GetJwksResponseSchema, LaunchTokenService } from "../../gen/platformapi/v1/launch_pb.js";
import {
  DataResponseSchema,
  DeleteResponseSchema,
  ExportResponseSchema,
  PlayerService,
} from "../../gen/platformapi/v1/players_pb.js";
import { writeExplicitNulls } from "../server/bodies/json-nulls.js";

// platformctl: a thin command-line client of AdminService (and of the project settings a studio makes with its
// private key). It prints each answer as the /v1 JSON API would.

function positiveInteger(value: string): number {
  const id = Number(value);
  if (!Number.isInteger(id) || id <= 0) throw new InvalidArgumentError("a positive integer");
  return id;
}

interface PageOptions {
  page?: number;
  pageSize?: number;
}

/** The paging options of a list command: the service's defaults (page 1, 50 a page) when left out. */
function paged(command: Command): Command {
  return command
    .option("--page <n>", "page, from 1", positiveInteger)
    .option("--page-size <n>", "items a page, up to 100", positiveInteger);
}

const program = new Command("platformctl")
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
function service() {
  const { url } = program.opts<{ url: string }>();
  return createConnectTransport({ baseUrl: url, httpVersion: "1.1" });
}

function admin() {
  const adminKey: string =
    program.opts<{ adminKey?: string }>().adminKey ??
    process.env.PLATFORM_ADMIN_KEY ??
    program.error("an admin key is needed: --admin-key or PLATFORM_ADMIN_KEY");
  return { client: createClient(AdminService, service()), headers: { "x-api-key": adminKey } };
}

/** The project commands' client: the project is the key's (its private key to change, any reading key to list). */
function project<Service extends DescService>(of: Service) {
  const key: string =
    program.opts<{ key?: string }>().key ??
    process.env.PLATFORM_API_KEY ??
    program.error("a project's API key is needed: --key or PLATFORM_API_KEY");
  return { client: createClient(of, service()), headers: { "x-api-key": key } };
}

/** The JSON of /v1: proto field names, defaults shown. */
const JSON_OPTIONS = { useProtoFieldName: true, alwaysEmitImplicit: true };

async function print<Desc extends DescMessage>(schema: Desc, answer: Promise<MessageShape<Desc>>): Promise<void> {
  try {
    const json = writeExplicitNulls(schema, toJson(schema, await answer, JSON_OPTIONS));
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  } catch (error) {
    program.error(ConnectError.from(error).message, { exitCode: 1 });
  }
}

const projects = program.command("projects").description("partner game integrations");
projects
  .command("create")
  .description("create a project for a game; prints its private and public keys once")
  .requiredOption("--name <name>", "project name")
  .requiredOption("--game-id <id>", "the game's id", positiveInteger)
  .action(async (o: { name: string; gameId: number }) => {
    const { client, headers } = admin();
    await print(CreateProjectResponseSchema, client.createProject({ name: o.name, gameId: o.gameId }, { headers }));
  });
paged(projects.command("list").description("list the projects, by game id")).action(async (o: PageOptions) => {
  const { client, headers } = admin();
  await print(ListProjectsResponseSchema, client.listProjects(o, { headers }));
});

const apiKeys = program.command("api-keys").description("API keys (shown once, stored hashed)");
apiKeys
  .command("create")
  .description("create a key: private, public or reader (need --project), platform or admin")
  .requiredOption("--type <type>", "private, public, reader, platform or admin")
  .option("--project <project_id>", "the project of a private, public or reader key", "")
  .action(async (o: { type: string; project: string }) => {
    const { client, headers } = admin();
    await print(CreateApiKeyResponseSchema, client.createApiKey({ type: o.type, projectId: o.project }, { headers }));
  });
apiKeys
  .command("revoke <key_id>")
  .description("revoke a key; refused from the next request on (by other instances within API_KEY_CACHE_SECONDS)")
  .action(async (keyId: string) => {
    const { client, headers } = admin();
    await print(RevokeApiKeyResponseSchema, client.revokeApiKey({ keyId }, { headers }));
  });
paged(apiKeys.command("list").description("list keys, oldest first: ids, types, scopes, state; never a key"))
  .option("--project <project_id>", "only this project's keys", "")
  .action(async (o: PageOptions & { project: string }) => {
    const { client, headers } = admin();
    await print(ListApiKeysResponseSchema, client.listApiKeys({ ...o, projectId: o.project }, { headers }));
  });

const entitlements = program.command("entitlements").description("the store's record of which users own which games");
entitlements
  .command("set")
  .description("record that a user owns a game (with --no-owns, that the user does not: a refund)")
  .requiredOption("--user <platform_user_id>", "platform user id (UUID)")
  .requiredOption("--game-id <id>", "the game's id", positiveInteger)
  .option("--no-owns", "record that the user does not own the game (a refund)")
  .option("--source <source>", "how it was obtained", "STORE")
  .option("--channel <channel_id>", "release channel", "")
  .option("--build <build_version>", "build version", "")
  .action(
    async (o: { user: string; gameId: number; owns: boolean; source: string; channel: string; build: string }) => {
      const { client, headers } = admin();
      const request = {
        platformUserId: o.user,
        gameId: o.gameId,
        owns: o.owns,
        source: o.source,
        channelId: o.channel,
        buildVersion: o.build,
      };
      await print(SetEntitlementResponseSchema, client.setEntitlement(request, { headers }));
    },
  );
paged(entitlements.command("list").description("list the records, by user and game"))
  .option("--user <platform_user_id>", "only this user's (UUID)")
  .option("--game-id <id>", "only this game's", positiveInteger)
  .action(async (o: PageOptions & { user?: string; gameId?: number }) => {
    const { client, headers } = admin();
    const request = { page: o.page, pageSize: o.pageSize, platformUserId: o.user, gameId: o.gameId };
    await print(ListEntitlementsResponseSchema, client.listEntitlements(request, { headers }));
  });

const properties = program
  .command("properties")
  .description("a project's summed event properties (trends' sum), with --key or PLATFORM_API_KEY");
properties
  .command("list")
  .description("the properties the project sums, by event name")
  .action(async () => {
    const { client, headers } = project(EventService);
    await print(ListPropertiesResponseSchema, client.listProperties({}, { headers }));
  });
properties
  .command("set")
  .description("sum a numeric property of an event name (at most 20 a project), after counting the events kept")
  .requiredOption("--name <name>", "the event name")
  .requiredOption("--property <property>", "the property")
  .option("--no-sum", "stop summing it")
  .action(async (o: { name: string; property: string; sum: boolean }) => {
    const { client, headers } = project(EventService);
    await print(UpdatePropertyResponseSchema, client.updateProperty(o, { headers }));
  });

/** Repeatable options gather their values. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `key=value`: the value as JSON when it reads as a number, boolean or quoted string, else as text. */
function traitsOf(pairs: readonly string[]): Record<string, JsonValue> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf("=");
      if (at <= 0) program.error(`--trait ${pair}: expected key=value`);
      const raw = pair.slice(at + 1);
      let value: JsonValue = raw;
      try {
        const parsed = JSON.parse(raw) as JsonValue;
        if (typeof parsed !== "object") value = parsed;
      } catch {
        // Plain text.
      }
      return [pair.slice(0, at), value];
    }),
  );
}

interface PlayerOptions {
  partner?: string;
  device?: string;
}

/** A players command's player: --partner or --device, exactly one. */
function playerOf(o: PlayerOptions): { partnerUserId: string } | { deviceId: string } {
  if ((o.partner === undefined) === (o.device === undefined)) program.error("name the player: --partner or --device");
  return o.partner !== undefined ? { partnerUserId: o.partner } : { deviceId: o.device! };
}

/** A server stream's messages as the NDJSON lines of /v1, written as they come (waiting while stdout is full). */
async function printLines<Desc extends DescMessage>(schema: Desc, lines: AsyncIterable<MessageShape<Desc>>) {
  try {
    for await (const line of lines) {
      const json = writeExplicitNulls(schema, toJson(schema, line, JSON_OPTIONS));
      if (!process.stdout.write(`${JSON.stringify(json)}\n`)) await once(process.stdout, "drain");
    }
  } catch (error) {
    program.error(ConnectError.from(error).message, { exitCode: 1 });
  }
}

const players = program.command("players").description("a project's players, with --key or PLATFORM_API_KEY");
players
  .command("export")
  .description("stream a cohort's profiles to stdout as NDJSON ({player} a line), by identity_key")
  .option("--tag <tag>", "a tag to match (repeatable; any of them unless --all-tags)", collect)
  .option("--all-tags", "match players carrying every --tag")
  .option("--tag-none <tag>", "a tag the players must not carry (repeatable)", collect)
  .option("--trait <key=value>", "a trait value to match (repeatable, all must match)", collect)
  .action(async (o: { tag?: string[]; allTags?: boolean; tagNone?: string[]; trait?: string[] }) => {
    const { client, headers } = project(PlayerService);
    const request = {
      tags: o.tag ?? [],
      tagsMatch: o.allTags ? "all" : undefined,
      tagsNone: o.tagNone ?? [],
      traits: traitsOf(o.trait ?? []) as JsonObject,
    };
    await printLines(ExportResponseSchema, client.export(request, { headers }));
  });
players
  .command("delete")
  .description("erase a player everywhere (profile, links, events) and out of every count; needs a private key")
  .option("--partner <partner_user_id>", "the player's partner user id")
  .option("--device <device_id>", "the player's device id (the player it is linked to, if any)")
  .action(async (o: PlayerOptions) => {
    const { client, headers } = project(PlayerService);
    await print(DeleteResponseSchema, client.delete(playerOf(o), { headers }));
  });
players
  .command("data")
  .description("stream what the service holds about a player to stdout as NDJSON: the profile, then their kept events")
  .option("--partner <partner_user_id>", "the player's partner user id")
  .option("--device <device_id>", "the player's device id (the player it is linked to, if any)")
  .action(async (o: PlayerOptions) => {
    const { client, headers } = project(PlayerService);
    await printLines(DataResponseSchema, client.data(playerOf(o), { headers }));
  });

const signingKeys = program.command("keys").description("launch token signing keys");
signingKeys
  .command("list")
  .description("the public keys that verify launch tokens now (the JWKS), newest last")
  .action(async () => {
    // The JWKS is public: no key needed.
    await print(GetJwksResponseSchema, createClient(LaunchTokenService, service()).getJwks({}));
  });
signingKeys
  .command("rotate")
  .description("make a new Ed25519 key sign launch tokens; older keys verify until their tokens expire")
  .action(async () => {
    const { client, headers } = admin();
    await print(RotateSigningKeyResponseSchema, client.rotateSigningKey({}, { headers }));
  });

await program.parseAsync();
