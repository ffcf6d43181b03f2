import { create, fromJson, toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate, ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import {
  ConfigEntrySchema,
  ConfigRuleSchema,
  ExperimentSchema,
  VariantSchema,
  type ConfigRule as ConfigRuleMessage,
  type UpdateEntryRequest,
  type UpdateExperimentRequest,
} from "../../../gen/platformapi/v1/config_pb.js";
import type { HeldValue } from "../../config/rules/compiled.js";
import type { EntryInput, Json, RuleInput } from "../../config/rules/entry.js";
import type { ExperimentInput, ExperimentState } from "../../config/rules/experiment.js";
import type { EntryRecord } from "../../config/storage/entry-store.js";
import type { ExperimentRecord } from "../../config/storage/experiment-store.js";
import { InvalidArgumentError } from "../../errors.js";
import type { CohortFilter } from "../../events/reads/query.js";
import { traitPairs } from "../../players/rules/profile-match.js";
import { withProtoKey } from "./proto-keys.js";

/** ConfigService and ExperimentService requests into domain values and back; the rules are the domain's (src/config/rules). */

const invalid = (message: string) => new InvalidArgumentError(message);

/** A request's JSON value: protobuf's Value as JSON (no NaN or Infinity, no key protobuf-es could not hold). */
function jsonOf(field: string, value: Value | undefined, protoKeys: ReadonlySet<string>): Json {
  if (value === undefined) throw invalid(`${field}: required`);
  if (protoKeys.has(field)) throw invalid(`${field}: the key "__proto__" is not allowed in a value`);
  try {
    return toJson(ValueSchema, value) as Json;
  } catch {
    throw invalid(`${field}: a JSON value (numbers finite)`);
  }
}

function ruleInput(rule: ConfigRuleMessage, i: number, protoKeys: ReadonlySet<string>): RuleInput {
  const field = `rules[${i}]`;
  return {
    tags: rule.tags,
    tagsMatch: rule.tagsMatch,
    tagsNone: rule.tagsNone,
    traits: rule.traits && withProtoKey(rule.traits, `${field}.traits`, protoKeys, null),
    rolloutPercent: rule.rolloutPercent,
    value: jsonOf(`${field}.value`, rule.value, protoKeys),
  };
}

export function entryInput(req: UpdateEntryRequest, protoKeys: ReadonlySet<string>): EntryInput {
  return {
    key: req.key,
    defaultValue: jsonOf("default_value", req.defaultValue, protoKeys),
    rules: req.rules.map((rule, i) => ruleInput(rule, i, protoKeys)),
    inLaunch: req.inLaunch,
  };
}

export function experimentInput(req: UpdateExperimentRequest, protoKeys: ReadonlySet<string>): ExperimentInput {
  return {
    name: req.name,
    variants: req.variants.map(({ name, weight }) => ({ name, weight })),
    control: req.control,
    tags: req.tags,
    tagsMatch: req.tagsMatch,
    tagsNone: req.tagsNone,
    traits: req.traits && withProtoKey(req.traits, "traits", protoKeys, null),
    // buf.validate admits these three alone.
    state: req.state as ExperimentState,
  };
}

/** Each compiled value's message, made once while its compile lives: a verify answers tens of them. */
const messages = new WeakMap<HeldValue, Value>();

export function valueMessage(value: HeldValue): Value {
  let message = messages.get(value);
  if (!message) messages.set(value, (message = fromJson(ValueSchema, value.json as JsonValue)));
  return message;
}

/** Each decided config's map of messages, made once while the decision is kept (LaunchDecisions). */
const maps = new WeakMap<ReadonlyMap<string, HeldValue>, Record<string, Value>>();

/** A player's config as an answer's map. */
export function configMessages(values: ReadonlyMap<string, HeldValue>): Record<string, Value> {
  let config = maps.get(values);
  if (!config) {
    config = {};
    for (const [key, value] of values) config[key] = valueMessage(value);
    maps.set(values, config);
  }
  return config;
}

/** The cohort filter as requests send it: tags, tags_match, tags_none, traits as an object. */
function filterFields(cohort: CohortFilter) {
  return {
    tags: cohort.tags,
    tagsMatch: cohort.tagsMatch,
    tagsNone: cohort.tagsNone,
    traits: Object.fromEntries(traitPairs(cohort.traits)) as JsonObject,
  };
}

export function entryMessage({ entry, version, updatedAt }: EntryRecord) {
  return create(ConfigEntrySchema, {
    key: entry.key,
    defaultValue: fromJson(ValueSchema, entry.defaultValue as JsonValue),
    rules: entry.rules.map((rule) =>
      create(ConfigRuleSchema, {
        ...filterFields(rule.cohort),
        rolloutPercent: rule.rolloutPercent ?? undefined,
        value: fromJson(ValueSchema, rule.value as JsonValue),
      }),
    ),
    inLaunch: entry.inLaunch,
    version,
    updatedAt: timestampFromDate(updatedAt),
  });
}

export function experimentMessage({ experiment, updatedAt }: ExperimentRecord) {
  const { name, variants, control, cohort, state } = experiment;
  return create(ExperimentSchema, {
    name,
    variants: variants.map((variant) => create(VariantSchema, variant)),
    control,
    ...filterFields(cohort),
    state,
    updatedAt: timestampFromDate(updatedAt),
  });
}
