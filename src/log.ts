import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Paths pino censors wherever they appear in a log line. Keys and tokens must
 * never reach a log, even when a whole request or error object is logged.
 */
const REDACT = [
  "key",
  "token",
  "private_key",
  "public_key",
  "adminKey",
  "env",
  "*.key",
  "*.token",
  "*.private_key",
  "*.public_key",
  "*.adminKey",
  "*.env",
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  "headers.authorization",
  "*.headers.authorization",
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT, censor: "[redacted]" } }, destination);
}
