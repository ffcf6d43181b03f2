import type { DescField } from "@bufbuild/protobuf";
import { isReflectMessage, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Text in a request must be well-formed Unicode. Storage would otherwise turn
 * each bad sequence into U+FFFD, so that different inputs collapse into one
 * player id. Bad text arrives two ways: an unpaired surrogate escape in JSON
 * ("\ud800"), and invalid UTF-8 in a binary message. protobuf-es checks UTF-8
 * while decoding proto3 strings, but connect-es reports the failure as
 * `internal`, before any interceptor runs. So a failed strict decode yields a
 * string marked with an unpaired surrogate instead, and the request check
 * (malformedTextPath) refuses both kinds with invalid_argument naming the field.
 */

const UNPAIRED_SURROGATE = /\p{Cs}/u;
const MARK = "\udc80";

const wellFormed = (text: string) => !UNPAIRED_SURROGATE.test(text);

const fatalDecoder = new TextDecoder("utf-8", { fatal: true });

/** A request body as text, or undefined when it is not valid UTF-8 (never text with U+FFFD put in). */
export function decodeUtf8Body(bytes: Uint8Array): string | undefined {
  try {
    return fatalDecoder.decode(bytes);
  } catch {
    return undefined;
  }
}

export const INVALID_UTF8_BODY = "request body is not valid UTF-8";

/** The text decoder of connect's JSON serialization: a Connect JSON body that is not UTF-8 is invalid_argument. */
export const strictUtf8Decoder = {
  decode(input?: Uint8Array): string {
    const text = decodeUtf8Body(input ?? new Uint8Array());
    if (text === undefined) throw new ConnectError(INVALID_UTF8_BODY, Code.InvalidArgument);
    return text;
  },
};

let marking = false;

/** Makes protobuf-es mark, not throw on, invalid UTF-8 in the strings it decodes; once per process. */
export function markInvalidUtf8(): void {
  if (marking) return;
  marking = true;
  const encoding = getTextEncoding();
  const decode = encoding.decodeUtf8;
  configureTextEncoding({
    ...encoding,
    decodeUtf8(bytes, strict) {
      if (!strict) return decode(bytes);
      try {
        return decode(bytes, true);
      } catch {
        return MARK + decode(bytes);
      }
    },
  });
}

/** The path of the first string (value or map key) that is not well-formed Unicode, e.g. "players[0].traits", or undefined. */
export function malformedTextPath(message: ReflectMessage, path = ""): string | undefined {
  for (const field of message.fields) {
    if (!message.isSet(field)) continue;
    const at = path === "" ? field.name : `${path}.${field.name}`;
    const found = malformedIn(field, message, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

function malformedIn(field: DescField, message: ReflectMessage, at: string): string | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return malformedValue(message.get(field), at);
    case "message":
      return malformedTextPath(message.get(field), at);
    case "list": {
      let index = 0;
      for (const item of message.get(field)) {
        const found = malformedValue(item, `${at}[${index++}]`);
        if (found !== undefined) return found;
      }
      return undefined;
    }
    case "map":
      for (const [key, value] of message.get(field)) {
        const found = malformedValue(key, at) ?? malformedValue(value, `${at}[${JSON.stringify(key)}]`);
        if (found !== undefined) return found;
      }
      return undefined;
    default:
      return undefined;
  }
}

function malformedValue(value: unknown, at: string): string | undefined {
  if (typeof value === "string") return wellFormed(value) ? undefined : at;
  if (isReflectMessage(value)) return malformedTextPath(value, at);
  return undefined;
}
