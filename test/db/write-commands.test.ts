import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { needsOwner } from "../../src/db/engine.js";
import { commandsOf } from "../support/commands.js";
import { waitFor } from "../support/service/events.js";
import { createLaunchFixture } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

/** `direct` watches the apply cursor around the service, so waiting for it sends no command of the service's. */
let svc: TestService;
let direct: MongoClient;
beforeAll(async () => {
  // API keys are looked up once and cached: a figure is what a request costs beyond its key's lookup, however long
  // the figures before it took.
  svc = await startTestService({ API_KEY_CACHE_SECONDS: "300" });
  direct = new MongoClient(inject("mongodbUri"));
});
afterAll(async () => {
  await svc.stop();
  await direct.close();
});

/**
 * Budgets per engine (docs/database.md, "Commands per request"): each request with what the worker applies for it. A
 * players round writes everything before it answers: its intent, its profiles (the commit point), then its sets, then
 * the intent forgotten; its figures are exact.
 */
const BUDGETS = {
  // The sole writer keeps what it read and wrote (profiles, sets, numbers); it writes 25 profiles a command.
  embedded: {
    // The intent, 4 profile commands, the tags' last given time, the tags' sets, the intent forgotten.
    newPlayers: 8,
    // The intent, 4 profile commands, the trait's column, the intent forgotten.
    existingPlayers: 7,
    // The intent, the profile, the tag's set, its last given time, the intent forgotten.
    oneTag: 5,
    tagListing: 2,
    thousandEventsApplied: 40,
    // Each new player's number looked up by `_id` (one command each: an `$in` scans on FerretDB), then handed out.
    thousandEventsOfUnknownPlayers: 140,
    // How the worker's passes take the calls' segments together varies from run to run (up to 102 seen).
    tenCallsOfHundredEvents: 120,
    repeatLaunchVerify: 2,
    repeatLaunchVerifyWithConfig: 2,
    spentTokenVerify: 3,
  },
  // Nothing kept that another instance may change: `$in` reads and writes of natural size.
  mongodb: {
    // The embedded figure, with the profiles read before the write and again after it (another instance may have
    // written them since: their sets are then written again), and the chunks of the sets and tags' times read.
    newPlayers: 9,
    // The same: the profiles read twice, the trait's column read before its write.
    existingPlayers: 7,
    oneTag: 9,
    // The tag list and the registry counter, the count of numbers, the tags' times and their sets.
    tagListing: 5,
    thousandEventsApplied: 40,
    thousandEventsOfUnknownPlayers: 40,
    tenCallsOfHundredEvents: 120,
    // At most once a second, the project's config version (another instance may have changed its config).
    repeatLaunchVerify: 3,
    // The player's profile too.
    repeatLaunchVerifyWithConfig: 4,
    spentTokenVerify: 3,
  },
};

/** Until the apply worker has applied every project's queued segments (events, folds and erasures). */
const applied = () =>
  waitFor(
    () =>
      direct
        .db(svc.config.dbName)
        .collection<{ _id: string; seq: number; applied: number }>("event_queues")
        .find()
        .toArray(),
    (docs) => docs.every((doc) => doc.applied >= doc.seq),
  );

describe("database commands of writes", () => {
  it("players/update, tag listing, events through apply and a repeat verify stay within their budgets", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const post = (path: string, body: object, key = publicKey) => svc.postOk(path, body, key);
    const update = (players: object[]) => post("/v1/players/update", { players });
    /**
     * The commands of `call` and of the apply it queues; the queue's own polling and bookkeeping are left out but
     * for events, where reading the queue is the apply's work.
     */
    const counted = async (call: () => Promise<unknown>, background = false) => {
      await applied();
      const during = async () => {
        await call();
        await applied();
      };
      return commandsOf(svc.database.client, during, { background });
    };
    // The project's first write: it registers the tags and fills the owner's memory of its profiles.
    await update(Array.from({ length: 100 }, (_, i) => ({ partner_user_id: `w${i}`, tags_add: ["a", "b", "c", "d"] })));

    const fresh = Array.from({ length: 100 }, (_, i) => ({ partner_user_id: `n${i}`, tags_add: ["a", "b", "c"] }));
    const increments = fresh.map(({ partner_user_id }) => ({ partner_user_id, traits_increment: { visits: 1 } }));
    const events = Array.from({ length: 1000 }, (_, i) => ({ name: "play", partner_user_id: `n${i % 100}` }));
    // A project whose players never had a profile: the worker still asks for each player's cohorts.
    const unknown = await svc.createProject();
    const strangers = Array.from({ length: 1000 }, (_, i) => ({ name: "play", partner_user_id: `s${i % 100}` }));
    const launch = await createLaunchFixture(svc);
    const { token } = await launch.issue();
    await launch.verify(token);
    // The same player launching again on the same installation: a new token, nothing to follow up.
    const { token: again } = await launch.issue();
    // The same in a project with an entry in the launch and a running experiment, the player exposed already.
    const configured = await createLaunchFixture(svc);
    const variants = [
      { name: "a", weight: 1 },
      { name: "b", weight: 1 },
    ];
    await post("/v1/config/update", { key: "shop", default_value: 1, in_launch: true }, configured.privateKey);
    await post("/v1/experiments/update", { name: "exp", variants, state: "running" }, configured.privateKey);
    await configured.verify((await configured.issue()).token);
    const { token: configuredAgain } = await configured.issue();
    // Not the figure below: the trait key's registration, and its cohorts turning on once 100 players carry it.
    await update(increments);
    await post("/v1/players/tags", { page: 1, page_size: 100 }, privateKey);

    const budgets = needsOwner(svc.database) ? BUDGETS.embedded : BUDGETS.mongodb;
    const figures: [keyof typeof budgets, string[]][] = [
      ["newPlayers", await counted(() => update(fresh))],
      ["existingPlayers", await counted(() => update(increments))],
      ["oneTag", await counted(() => update([{ partner_user_id: "n1", tags_add: ["d"] }]))],
      ["tagListing", await counted(() => post("/v1/players/tags", { page: 1, page_size: 100 }, privateKey))],
      ["thousandEventsApplied", await counted(() => post("/v1/events", { events }), true)],
      [
        "thousandEventsOfUnknownPlayers",
        await counted(() => post("/v1/events", { events: strangers }, unknown.publicKey), true),
      ],
      [
        "tenCallsOfHundredEvents",
        await counted(async () => {
          for (let call = 0; call < 10; call++) await post("/v1/events", { events: events.slice(0, 100) });
        }, true),
      ],
      ["repeatLaunchVerify", await counted(() => launch.verify(again))],
      ["repeatLaunchVerifyWithConfig", await counted(() => configured.verify(configuredAgain))],
      ["spentTokenVerify", await counted(() => launch.verify(token))],
    ];
    for (const [figure, commands] of figures) {
      expect.soft(commands.length, `${figure}: ${commands.join(", ")}`).toBeLessThanOrEqual(budgets[figure]);
    }
  });

  it("players/update that changes nothing sends no write command: no profile, no change record, last_seen_at kept", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const update = (players: object[]) => svc.postOk("/v1/players/update", { players }, publicKey);
    const profile = async () =>
      (await svc.postOk("/v1/players/get", { partner_user_id: "same" }, privateKey)).profile as object;
    await update([{ partner_user_id: "same", tags_add: ["a"], traits: { level: 3 } }]);
    await applied();
    const before = await profile();
    svc.clock.advance(60_000);
    for (const players of [
      // An id alone: what a game client with the public key sends to say nothing.
      [{ partner_user_id: "same" }],
      // Operations whose result is the profile as it is.
      [{ partner_user_id: "same", tags_add: ["a"], tags_remove: ["b"], traits: { level: 3 }, traits_unset: ["x"] }],
    ]) {
      const commands = await commandsOf(svc.database.client, async () => {
        await update(players);
        await applied();
      });
      expect(commands.filter((command) => /^(insert|update|delete|findAndModify) /.test(command))).toEqual([]);
    }
    expect(await profile()).toEqual(before);
  });

  it("a tag change costs a player with 30 active days the same commands as a player with none (issue 46)", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const update = (players: object[]) => svc.postOk("/v1/players/update", { players }, publicKey);
    // The tag registered, the two players' profiles written (and, on the embedded engine, held) beforehand.
    await update([
      { partner_user_id: "veteran", tags_add: ["seen"] },
      { partner_user_id: "newcomer", tags_add: ["seen"] },
      { partner_user_id: "other", tags_add: ["loyal"] },
    ]);
    const last = svc.clock.now().getTime() - 60_000;
    const days = Array.from({ length: 30 }, (_, i) => new Date(last - (29 - i) * 86_400_000).toISOString());
    const events = days.map((timestamp) => ({ name: "play", partner_user_id: "veteran", timestamp }));
    expect((await svc.postOk("/v1/events", { events }, publicKey)).accepted).toBe(30);
    await applied();

    // The worker's hourly retention sweep of the project (a read of its months of names) may fall in either call.
    const tagged = async (player: string) =>
      (await commandsOf(svc.database.client, () => update([{ partner_user_id: player, tags_add: ["loyal"] }]))).filter(
        (command) => command !== "find event_activity_days",
      );
    const newcomer = await tagged("newcomer");
    const veteran = await tagged("veteran");
    expect(veteran, `veteran: ${veteran.join(", ")}; newcomer: ${newcomer.join(", ")}`).toHaveLength(newcomer.length);
    expect(newcomer.length).toBeGreaterThan(0);
    // The veteran's 30 days are counted in the tag's cohort by the very next read.
    const trends = await svc.postOk(
      "/v1/events/trends",
      { from: days[0].slice(0, 10), to: days[29].slice(0, 10), tags: ["loyal"] },
      privateKey,
    );
    const points = trends.series.find((series: { name: string }) => series.name === "play").points;
    expect(points.map((point: { players: number }) => point.players)).toEqual(Array(30).fill(1));
  });
});
