import { pathToString, reflect } from "@bufbuild/protobuf/reflect";
import { createValidator, ValidationError, type Violation } from "@bufbuild/protovalidate";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createValidateInterceptor } from "@connectrpc/validate";
import { InvalidArgumentError } from "../../errors.js";
import { malformedTextPath } from "../bodies/unicode.js";

/**
 * Request rules live in the proto as buf.validate options, where generated
 * clients and the OpenAPI document see them too. This module enforces them
 * and holds the few rules a proto cannot state: trimming, and the one
 * spelling of a UUID. Normalisation of tags and traits (dropped items) is the
 * players domain's (src/players/rules/normalise.ts).
 */

/** The wording the API documents for some rules; the others keep protovalidate's ("must be at most 200 characters"). */
const WORDING: Readonly<Record<string, string>> = {
  required: "required",
  "string.uuid": "must be a UUID",
  "string.uuid_empty": "must be a UUID",
};

/** The wording of the proto's string patterns, which protovalidate words as the regular expression itself. */
const PATTERN_WORDING: Readonly<Record<string, string>> = {
  "^[^\\x00-\\x1F\\x7F-\\x9F]*$": "must not contain control characters",
  "^[A-Za-z0-9_.:-]{1,64}$": "1 to 64 characters of letters, digits, _ - . :",
};

function patternWording(violation: Violation): string | undefined {
  if (violation.ruleId !== "string.pattern") return undefined;
  const pattern = /`(.*)`$/.exec(violation.message)?.[1];
  return pattern === undefined ? undefined : PATTERN_WORDING[pattern];
}

/** "players[0].partner_user_id: must be at most 256 characters"; a rule on the whole message names its fields itself. */
export function describeViolation(violation: Violation): string {
  const field = pathToString(violation.field);
  const text = WORDING[violation.ruleId] ?? patternWording(violation) ?? violation.message;
  return field === "" ? text : `${field}: ${text}`;
}

/**
 * Checks that a request's text is well-formed Unicode (src/server/bodies/unicode.ts),
 * then its buf.validate rules with @connectrpc/validate, and words the
 * violations as every other invalid_argument of the API: "field: what is
 * wrong", several joined by "; ". The error carries no details, so that its
 * JSON is the {code, message} of every other error.
 */
export function validationInterceptor(): Interceptor {
  const validate = createValidateInterceptor({ validator: createValidator() });
  return (next) => {
    const validated = validate(next);
    return async (req) => {
      const malformed = req.stream ? undefined : malformedTextPath(reflect(req.method.input, req.message));
      if (malformed !== undefined) {
        throw new InvalidArgumentError(
          `${malformed}: must be valid Unicode text (invalid UTF-8 or an unpaired surrogate)`,
        );
      }
      try {
        return await validated(req);
      } catch (error) {
        if (!(error instanceof ConnectError) || !(error.cause instanceof ValidationError)) throw error;
        const message = error.cause.violations.map(describeViolation).join("; ");
        throw new ConnectError(message, Code.InvalidArgument, undefined, undefined, error.cause);
      }
    };
  };
}

/** Text trimmed; text that is blank once trimmed counts as missing. */
export function requiredText(field: string, value: string): string {
  const text = value.trim();
  if (text === "") throw new InvalidArgumentError(`${field}: required`);
  return text;
}

/** The proto's string.uuid rule admits either case; lowercase gives one id one spelling. */
export function canonicalUuid(value: string): string {
  return value.toLowerCase();
}
