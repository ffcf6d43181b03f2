import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { commandsOf } from "../../../test/support/commands.js";
import { engineOf } from "../../db/engine.js";
import { AccountLinkStore } from "./link-stores.js";

let client: MongoClient;
beforeAll(async () => {
  client = new MongoClient(inject("mongodbUri"), { monitorCommands: true });
  await client.connect();
});
afterAll(() => client.close());

const db = () => client.db(`account-links-${randomUUID()}`);
/** The embedded engine's owner with `bytes` of memory (none at 0). */
const ownerOf = (bytes: number) => engineOf({ isFerretDb: true }, bytes);

/** The account-link reads `call` sends. */
const readsOf = async (call: () => Promise<unknown>) =>
  (await commandsOf(client, call)).filter((name) => name === "find player_accounts").length;

describe("AccountLinkStore on the owner of its database", () => {
  it("reads a project's links once, then answers lookups and its own links from memory", async () => {
    const store = new AccountLinkStore(db(), ownerOf(2 ** 20));
    const now = new Date();
    await store.link("p1", "alice", "user-a", now);
    expect(await readsOf(() => store.findPlatformUser("p1", "alice"))).toBe(1);
    expect(await readsOf(() => store.findPlatformUser("p1", "bob"))).toBe(0);
    await store.link("p1", "bob", "user-b", now);
    const found = await Promise.all(["alice", "bob", "carol"].map((p) => store.findPlatformUser("p1", p)));
    expect(found).toEqual(["user-a", "user-b", null]);
    expect(await store.findPlatformUser("p2", "alice")).toBeNull();
  });

  it("a first lookup racing a link answers before or after it, and every later lookup sees the link", async () => {
    const store = new AccountLinkStore(db(), ownerOf(2 ** 20));
    // The fill's scan is sent first; the link is written while it runs.
    const [during] = await Promise.all([
      store.findPlatformUser("p1", "alice"),
      store.link("p1", "alice", "user-a", new Date()),
    ]);
    expect([null, "user-a"]).toContain(during);
    expect(await store.findPlatformUser("p1", "alice")).toBe("user-a");
  });

  it("reads each lookup from the database without memory, or when the project does not fit it", async () => {
    const database = db();
    await new AccountLinkStore(database, ownerOf(0)).link("p1", "alice", "user-a", new Date());
    for (const store of [new AccountLinkStore(database, ownerOf(0)), new AccountLinkStore(database, ownerOf(10))]) {
      expect(await readsOf(() => store.findPlatformUser("p1", "alice"))).toBeGreaterThanOrEqual(1);
      expect(await readsOf(() => store.findPlatformUser("p1", "alice"))).toBe(1);
      expect(await store.findPlatformUser("p1", "alice")).toBe("user-a");
    }
  });
});
