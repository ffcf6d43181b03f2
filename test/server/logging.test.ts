import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { logLines } from "../support/log-lines.js";

function capture() {
  const { destination, lines } = logLines();
  return { log: createLogger("info", destination), output: () => lines.join("") };
}

describe("logger", () => {
  it("censors keys, tokens and environments wherever they sit in a logged object", () => {
    const { log, output } = capture();
    const secrets = ["sk_secret_private", "eyJhbGciOiJFZERTQSJ9.payload.sig", "adm_secret_admin", "pk_secret_public"];
    log.info({ key: secrets[0], token: secrets[1] }, "top level");
    log.info({ req: { headers: { "x-api-key": secrets[2] } } }, "header");
    log.info({ answer: { private_key: secrets[0], public_key: secrets[3], token: secrets[1] } }, "nested");
    log.info({ launch: { env: { PLATFORM_LAUNCH_TOKEN: secrets[1] } } }, "environment");
    const text = output();
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text.match(/\[redacted\]/g)?.length).toBeGreaterThanOrEqual(7);
  });
});
