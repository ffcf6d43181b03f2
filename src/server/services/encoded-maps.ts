import { create, toBinary, type UnknownField } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { WireType } from "@bufbuild/protobuf/wire";
import { VerifyResponseSchema, type VerifyResponse } from "../../../gen/platformapi/v1/launch_pb.js";
import type { HeldValue } from "../../config/rules/compiled.js";
import { valueMessage } from "./config-requests.js";

/**
 * A verify's config and experiments in a binary answer (gRPC, gRPC-Web, Connect's proto), their map entries
 * encoded once. protobuf-es encodes a map of 50 `google.protobuf.Value`s field by field in about a millisecond
 * (measured: 1.1 ms against 15 µs for the answer without them), while it writes a message's unknown fields as the
 * bytes they are: so each entry is encoded once, kept beside its value, and the answer carries the entries as those
 * bytes. On the wire they are the map's entries; a JSON answer, which leaves unknown fields out, carries the maps.
 */

/** Whether the call's messages travel as protobuf binary: every content type but JSON's. */
export const isBinaryCall = (ctx: HandlerContext) => !(ctx.requestHeader.get("content-type") ?? "").includes("json");

/** An entry's bytes after its tag (its length, then key and value), as protobuf-es reads and writes unknown fields. */
function entryBytes(init: Partial<Pick<VerifyResponse, "config" | "experiments">>): Uint8Array {
  // The answer holding the one entry alone is its tag (one byte: fields 8 and 9) and the bytes after it.
  return toBinary(VerifyResponseSchema, create(VerifyResponseSchema, init)).subarray(1);
}

/** Each config value's entry: a value belongs to one entry of one compile, so its key is always the same. */
const configEntries = new WeakMap<HeldValue, Uint8Array>();
/** Each `<experiment>/<variant>` entry: a few hundred at most, for the experiments a project ever ran. */
const experimentEntries = new Map<string, Uint8Array>();

const CONFIG_FIELD = VerifyResponseSchema.field.config.number;
const EXPERIMENTS_FIELD = VerifyResponseSchema.field.experiments.number;

/** Each decided config's entries as one field, while the decision is kept (LaunchDecisions). */
const configFields = new WeakMap<ReadonlyMap<string, HeldValue>, UnknownField[]>();

/** The config and experiments maps of a verify's answer, as its unknown fields of already encoded entries. */
export function encodedMaps(
  config: ReadonlyMap<string, HeldValue>,
  experiments: ReadonlyMap<string, string>,
): UnknownField[] {
  let fields = configFields.get(config);
  if (!fields) {
    const entries = [...config].map(([key, value]) => {
      let data = configEntries.get(value);
      if (!data) configEntries.set(value, (data = entryBytes({ config: { [key]: valueMessage(value) } })));
      return data;
    });
    configFields.set(config, (fields = joined(CONFIG_FIELD, entries)));
  }
  const variants = [...experiments].map(([name, variant]) => {
    const id = `${name}/${variant}`;
    let data = experimentEntries.get(id);
    if (!data) experimentEntries.set(id, (data = entryBytes({ experiments: { [name]: variant } })));
    return data;
  });
  return [...fields, ...joined(EXPERIMENTS_FIELD, variants)];
}

/**
 * Entries of field `no` as one unknown field: its writer puts the field's tag before the first entry's bytes, and the
 * others follow each after its own tag, so the wire holds each entry as the map's.
 */
function joined(no: number, entries: readonly Uint8Array[]): UnknownField[] {
  if (entries.length === 0) return [];
  const tag = (no << 3) | WireType.LengthDelimited;
  const data = new Uint8Array(entries.reduce((sum, entry) => sum + entry.length + 1, -1));
  let at = 0;
  entries.forEach((entry, i) => {
    if (i > 0) data[at++] = tag;
    data.set(entry, at);
    at += entry.length;
  });
  return [{ no, wireType: WireType.LengthDelimited, data }];
}
