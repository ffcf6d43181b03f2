import { InvalidArgumentError } from "../errors.js";

/** A required, trimmed string of at most `max` characters; the error names the field. */
export function requireText(field: string, value: string, max: number): string {
  const text = value.trim();
  if (text === "") throw new InvalidArgumentError(`${field}: required`);
  if (text.length > max) throw new InvalidArgumentError(`${field}: at most ${max} characters`);
  return text;
}

export function requireGameId(value: number): number {
  if (value === 0) throw new InvalidArgumentError("game_id: required, a positive integer");
  return value;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A required UUID, lowercased so that one id has one spelling. */
export function requireUuid(field: string, value: string): string {
  const text = value.trim();
  if (text === "") throw new InvalidArgumentError(`${field}: required`);
  if (!UUID.test(text)) throw new InvalidArgumentError(`${field}: must be a UUID`);
  return text.toLowerCase();
}
