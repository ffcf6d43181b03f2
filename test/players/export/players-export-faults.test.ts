import type { CommandStartedEvent } from "mongodb";
import { describe, expect, it, onTestFinished } from "vitest";
import { EXPORT_BATCH } from "../../../src/players/export.js";
import { serviceBehindProxy } from "../../support/db/db-proxy.js";

// What a client of /v1/players/export sees when the database fails: before the first line the usual JSON error;
// after it a body cut short (the chunked encoding's last chunk never comes), never one that looks complete.

describe("players/export when the database fails", () => {
  it("answers 503 before the first line, and cuts the body short after it", async () => {
    // No owner's memory: the export reads the database as it streams.
    const { proxy, svc, stop } = await serviceBehindProxy({ DB_TIMEOUT_MS: "3000", OWNER_MEMORY_MB: "0" });
    onTestFinished(stop);
    const { privateKey, publicKey } = await svc.createProject();
    const count = EXPORT_BATCH + 200;
    for (let i = 0; i < count; i += 100) {
      const players = Array.from({ length: 100 }, (_, j) => ({ partner_user_id: `p${i + j}`, tags: ["vip"] }));
      await svc.postOk("/v1/players/update", { players }, publicKey);
    }
    const exportAll = () =>
      fetch(`${svc.baseUrl}/v1/players/export`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": privateKey },
        body: "{}",
      });
    const ranged = (e: CommandStartedEvent) => e.command.find === "player_profiles" && e.command.filter?._id?.$lt;

    // MongoDB reads a page by `_id` after the last one: the cut falls on the second page, after a first line.
    // FerretDB reads one cursor: the cut falls on it, before any line.
    const secondPage = (e: CommandStartedEvent) =>
      e.command.find === "player_profiles" && e.command.filter?._id?.$gt?.endsWith("/") === false;
    const cut = proxy.cutAt(svc.database.client, svc.database.isFerretDb ? ranged : secondPage);
    const res = await exportAll();
    if (svc.database.isFerretDb) {
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ code: "unavailable" });
    } else {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/x-ndjson");
      let lines = 0;
      const reading = (async () => {
        const decoder = new TextDecoder();
        for await (const chunk of res.body!) lines += decoder.decode(chunk).split("\n").length - 1;
      })();
      await expect(reading).rejects.toThrow();
      expect(lines).toBe(EXPORT_BATCH);
    }
    await cut;
    await proxy.restoreFor(svc.baseUrl);
    const whole = await exportAll();
    expect((await whole.text()).trimEnd().split("\n")).toHaveLength(count);
  });
});
