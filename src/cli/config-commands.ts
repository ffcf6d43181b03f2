import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import {
  ConfigRuleSchema,
  ConfigService,
  DeleteEntryResponseSchema,
  EvaluateResponseSchema,
  ExperimentService,
  ListEntriesResponseSchema,
  ListExperimentsResponseSchema,
  ListVersionsResponseSchema,
  ResultsResponseSchema,
  RestoreVersionResponseSchema,
  UpdateEntryResponseSchema,
  UpdateExperimentResponseSchema,
} from "../../gen/platformapi/v1/config_pb.js";
import {
  collect,
  jsonOrText,
  paged,
  playerOf,
  positiveInteger,
  print,
  program,
  project,
  traitsOf,
  type PageOptions,
  type PlayerOptions,
} from "./client.js";

// platformctl's config and experiments commands, with the project's key (--key or PLATFORM_API_KEY).

/** A --rule: one rule as config/update's JSON takes it, e.g. {"tags":["vip"],"rollout_percent":50,"value":true}. */
function ruleOf(text: string) {
  try {
    return fromJson(ConfigRuleSchema, JSON.parse(text) as JsonValue);
  } catch (error) {
    return program.error(`--rule ${text}: ${(error as Error).message}`);
  }
}

/** Adds the config and experiments commands to the program. */
export function addConfigCommands(): void {
  const config = program.command("config").description("a project's config entries (the private key changes them)");
  config
    .command("set <key>")
    .description("set an entry: its default value and its rules, the first that matches deciding; a new version")
    .requiredOption("--default <value>", "the default value, as JSON (text that is no JSON is a string)")
    .option(
      "--rule <json>",
      'a rule, in order (repeatable): {"tags":["vip"],"rollout_percent":50,"value":...}',
      collect,
    )
    .option("--in-launch", "answer it in every valid verify")
    .action(async (key: string, o: { default: string; rule?: string[]; inLaunch?: boolean }) => {
      const { client, headers } = project(ConfigService);
      const request = {
        key,
        defaultValue: fromJson(ValueSchema, jsonOrText(o.default)),
        rules: (o.rule ?? []).map(ruleOf),
        inLaunch: o.inLaunch ?? false,
      };
      await print(UpdateEntryResponseSchema, client.updateEntry(request, { headers }));
    });
  paged(config.command("list").description("the entries, by key")).action(async (o: PageOptions) => {
    const { client, headers } = project(ConfigService);
    await print(ListEntriesResponseSchema, client.listEntries(o, { headers }));
  });
  paged(config.command("history <key>").description("an entry's versions, newest first: who, when, what")).action(
    async (key: string, o: PageOptions) => {
      const { client, headers } = project(ConfigService);
      await print(ListVersionsResponseSchema, client.listVersions({ key, ...o }, { headers }));
    },
  );
  config
    .command("restore <key> <version>")
    .description("make a new version of an entry equal to an earlier one")
    .action(async (key: string, version: string) => {
      const { client, headers } = project(ConfigService);
      const request = { key, version: positiveInteger(version) };
      await print(RestoreVersionResponseSchema, client.restoreVersion(request, { headers }));
    });
  config
    .command("delete <key>")
    .description("delete an entry (a version of its own: a restore brings it back)")
    .action(async (key: string) => {
      const { client, headers } = project(ConfigService);
      await print(DeleteEntryResponseSchema, client.deleteEntry({ key }, { headers }));
    });
  config
    .command("evaluate")
    .description("what a player gets now: the in_launch entries (or --entry ones) and their experiments' variants")
    .option("--partner <partner_user_id>", "the player's partner user id")
    .option("--device <device_id>", "the player's device id (the player it is linked to, if any)")
    .option("--entry <key>", "an entry to evaluate (repeatable); the in_launch ones without it", collect)
    .action(async (o: PlayerOptions & { entry?: string[] }) => {
      const { client, headers } = project(ConfigService);
      const request = { ...playerOf(o), keys: o.entry ?? [] };
      await print(EvaluateResponseSchema, client.evaluate(request, { headers }));
    });

  /** `name=weight` of a --variant. */
  function variantOf(pair: string) {
    const at = pair.lastIndexOf("=");
    if (at <= 0) program.error(`--variant ${pair}: expected name=weight`);
    return { name: pair.slice(0, at), weight: Number(pair.slice(at + 1)) };
  }

  const experiments = program
    .command("experiments")
    .description("a project's experiments (the private key changes them)");
  experiments
    .command("set <name>")
    .description("create or change an experiment; without --variant only its state changes")
    .requiredOption("--state <state>", "draft, running or stopped")
    .option("--variant <name=weight>", "a variant and its weight, in order (repeatable, 2 to 9)", collect)
    .option("--control <variant>", "the variant the others are compared with (default: the first)")
    .option("--tag <tag>", "eligible: players with this tag (repeatable; any of them unless --all-tags)", collect)
    .option("--all-tags", "eligible: players carrying every --tag")
    .option("--tag-none <tag>", "eligible: players without this tag (repeatable)", collect)
    .option("--trait <key=value>", "eligible: players with this trait value (repeatable, all must match)", collect)
    .action(
      async (
        name: string,
        o: {
          state: string;
          variant?: string[];
          control?: string;
          tag?: string[];
          allTags?: boolean;
          tagNone?: string[];
          trait?: string[];
        },
      ) => {
        const { client, headers } = project(ExperimentService);
        const request = {
          name,
          state: o.state,
          variants: (o.variant ?? []).map(variantOf),
          control: o.control ?? "",
          tags: o.tag ?? [],
          tagsMatch: o.allTags ? "all" : "",
          tagsNone: o.tagNone ?? [],
          traits: traitsOf(o.trait ?? []) as JsonObject,
        };
        await print(UpdateExperimentResponseSchema, client.updateExperiment(request, { headers }));
      },
    );
  paged(experiments.command("list").description("the experiments, by name")).action(async (o: PageOptions) => {
    const { client, headers } = project(ExperimentService);
    await print(ListExperimentsResponseSchema, client.listExperiments(o, { headers }));
  });
  experiments
    .command("results <name>")
    .description("per variant: exposed players, a metric from each one's exposure day, its difference from the control")
    .requiredOption("--metric <kind>", "return (an event on day --days after), event or sum (within --days days)")
    .requiredOption("--days <n>", "1 to 90", positiveInteger)
    .option("--event <name>", "the event name of event and sum")
    .option("--property <property>", "the summed property of sum")
    .action(async (name: string, o: { metric: string; days: number; event?: string; property?: string }) => {
      const { client, headers } = project(ExperimentService);
      const metric = { kind: o.metric, days: o.days, name: o.event ?? "", property: o.property ?? "" };
      await print(ResultsResponseSchema, client.results({ name, metric }, { headers }));
    });
}
