import type { CommandStartedEvent } from "mongodb";
import { describe, expect, it, onTestFinished } from "vitest";
import { sortKeys } from "../../../src/players/rules/identity-key.js";
import { EXPORT_BATCH } from "../../../src/players/search.js";
import { serviceBehindProxy } from "../../support/db/db-proxy.js";

// What a client of /v1/players/export sees when the database fails: before the first line the usual JSON error;
// after it a body cut short (the chunked encoding's last chunk never comes), never one that looks complete.

describe("players/export when the database fails", () => {
  it("answers 503 before the first line, and cuts the body short after it", async () => {
    // No cache: the export reads each profile from the database as it streams, on every engine.
    const { proxy, svc, stop } = await serviceBehindProxy({ DB_TIMEOUT_MS: "3000", CACHE_MB: "0" });
    onTestFinished(stop);
    const { projectId, privateKey, publicKey } = await svc.createProject();
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
    // The profiles are read by `_id` a batch at a time, in identity key order.
    const ids = sortKeys(Array.from({ length: count }, (_, i) => `u:p${i}`)).map((key) => `${projectId}/${key}`);
    const readOf = (batch: Set<string>) => (e: CommandStartedEvent) => {
      const id = e.command.filter?._id;
      return (
        e.command.find === "player_profiles" &&
        (typeof id === "string" ? [id] : (id?.$in ?? [])).some((i: string) => batch.has(i))
      );
    };
    const firstBatch = readOf(new Set(ids.slice(0, EXPORT_BATCH)));
    const secondBatch = readOf(new Set(ids.slice(EXPORT_BATCH)));

    // A read of the first batch cut: nothing sent yet, so the usual error.
    let cut = proxy.cutAt(svc.database.client, firstBatch);
    const refused = await exportAll();
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: "unavailable" });
    await cut;
    await proxy.restoreFor(svc.baseUrl);

    // A read of the second batch cut: the first batch's lines sent, then the body cut short.
    cut = proxy.cutAt(svc.database.client, secondBatch);
    const res = await exportAll();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    let lines = 0;
    const reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of res.body!) lines += decoder.decode(chunk).split("\n").length - 1;
    })();
    await expect(reading).rejects.toThrow();
    expect(lines).toBe(EXPORT_BATCH);
    await cut;
    await proxy.restoreFor(svc.baseUrl);
    const whole = await exportAll();
    expect((await whole.text()).trimEnd().split("\n")).toHaveLength(count);
  });
});
