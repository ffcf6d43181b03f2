import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import {
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
import {
  admin,
  collect,
  paged,
  playerOf,
  positiveInteger,
  print,
  printLines,
  program,
  project,
  service,
  traitsOf,
  type PageOptions,
  type PlayerOptions,
} from "./client.js";
import { addConfigCommands } from "./config-commands.js";

// platformctl: a thin command-line client of AdminService (and of the project settings a studio makes with its
// private key). It prints each answer as the /v1 JSON API would. The config and experiments commands are in
// config-commands.ts.

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

addConfigCommands();
await program.parseAsync();
