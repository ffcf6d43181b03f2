import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WAL_SIZE_LIMIT_BYTES } from "../../src/db/ferretdb.js";
import { startOwnFerretDb } from "../support/db/own-engine.js";
import { waitFor } from "../support/service/events.js";

/** The embedded engine's write-ahead log shrinks back after a large write (issue 24, item 6). */

let engine: Awaited<ReturnType<typeof startOwnFerretDb>>;
let client: MongoClient;
beforeAll(async () => {
  engine = await startOwnFerretDb();
  client = await MongoClient.connect(engine.embedded.uri);
});
afterAll(async () => {
  await client?.close();
  await engine?.stop();
});

/** The sizes of the engine's files whose names end with `suffix`, in bytes. */
async function sizes(suffix: string): Promise<number[]> {
  const files = (await readdir(engine.dataDir, { recursive: true })).filter((file) => file.endsWith(suffix));
  return Promise.all(files.map(async (file) => (await stat(path.join(engine.dataDir, file))).size));
}
const largestLog = async () => Math.max(...(await sizes("-wal")));

describe("the embedded FerretDB's write-ahead log", () => {
  it("is cut back to its limit after a write larger than the limit has been checkpointed", async () => {
    const documents = client.db("wal_test").collection<{ n: number; blob: string }>("blobs");
    // One insert command (the driver sends up to 16 MB in one) is one SQLite transaction: all its pages go to
    // the log before a checkpoint can copy them back.
    const blob = "x".repeat(128 * 1024);
    const count = Math.ceil((2.5 * WAL_SIZE_LIMIT_BYTES) / blob.length);
    await documents.insertMany(Array.from({ length: count }, (_, n) => ({ n, blob })));
    // The write went through the log: the log and the database together hold more than the limit.
    const written = [...(await sizes("-wal")), ...(await sizes(".sqlite"))].reduce((a, b) => a + b, 0);
    expect(written).toBeGreaterThan(1.5 * WAL_SIZE_LIMIT_BYTES);
    // Small writes after the checkpoint restart the log, which SQLite then truncates to the limit.
    let n = count;
    await waitFor(
      async () => {
        await documents.insertOne({ n: n++, blob: "small" });
        return largestLog();
      },
      (largest) => largest <= WAL_SIZE_LIMIT_BYTES,
    );
    expect(await documents.countDocuments()).toBe(n);
  });
});
