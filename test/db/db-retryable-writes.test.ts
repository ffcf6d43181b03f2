import type { CommandStartedEvent } from "mongodb";
import { describe, expect, it } from "vitest";
import { scratchDatabase } from "../support/db/scratch-database.js";

const database = scratchDatabase("retryable");

describe("retryable writes", () => {
  it("are on, and on a standalone server (both test engines) a write carries no transaction number to retry by", async () => {
    expect(database().client.options.retryWrites).toBe(true);
    const started: CommandStartedEvent[] = [];
    const record = (event: CommandStartedEvent) => started.push(event);
    database().client.on("commandStarted", record);
    try {
      await database()
        .db.collection("writes")
        .insertOne({ _id: "one" } as never);
    } finally {
      database().client.off("commandStarted", record);
    }
    const insert = started.find((event) => event.commandName === "insert");
    // A replica set or a sharded cluster gets one (the driver's retry is deduplicated by it); a standalone never.
    expect(insert?.command.txnNumber).toBeUndefined();
  });
});
