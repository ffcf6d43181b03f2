import { Code, ConnectError } from "@connectrpc/connect";

/** A required, trimmed string of at most `max` characters; the error names the field. */
export function requireText(field: string, value: string, max: number): string {
  const text = value.trim();
  if (text === "") throw new ConnectError(`${field}: required`, Code.InvalidArgument);
  if (text.length > max) throw new ConnectError(`${field}: at most ${max} characters`, Code.InvalidArgument);
  return text;
}

export function requireGameId(value: number): number {
  if (value === 0) throw new ConnectError("game_id: required, a positive integer", Code.InvalidArgument);
  return value;
}
