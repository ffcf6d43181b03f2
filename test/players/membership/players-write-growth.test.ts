import { BSON } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startedDuring } from "../../support/commands.js";
import { ownerRoundsDone } from "../../support/service/metrics.js";
import { startTestService, type TestService } from "../../support/service/service.js";

// The embedded engine only (vitest.config.ts EMBEDDED_ONLY): MongoDB keeps no membership documents, its profiles'
// tag index is the membership, and a round writes the counts alone there.

/** Partner ids of one length, so that profiles and keys weigh the same whichever tag they carry. */
const partnerId = (prefix: string, i: number) => `${prefix}${String(i).padStart(6, "0")}`;
/**
 * What a player update at the large tag may write beyond one at the small tag: a membership page (at most 257 keys
 * of 9 characters, 12 bytes each in its JSON string, ~3.1 KB) and not a whole bucket (2,500 keys, ~30 KB).
 */
const PAGE_BYTES = 4_096;
const SMALL = 100;
const LARGE = 20_000;

let svc: TestService;
let publicKey: string;
beforeAll(async () => {
  svc = await startTestService();
  ({ publicKey } = await svc.createProject());
  // Tag "lrg" of LARGE members and "sml" of SMALL, written as any caller would.
  const players = [
    ...Array.from({ length: LARGE }, (_, i) => ({ partner_user_id: partnerId("l", i), tags_add: ["lrg"] })),
    ...Array.from({ length: SMALL }, (_, i) => ({ partner_user_id: partnerId("s", i), tags_add: ["sml"] })),
  ];
  for (let from = 0; from < players.length; from += 100) {
    await svc.postOk("/v1/players/update", { players: players.slice(from, from + 100) }, publicKey);
  }
  await ownerRoundsDone(svc);
});
afterAll(() => svc.stop());

const WRITES = new Set(["insert", "update", "delete", "findAndModify"]);
/**
 * What an update writes for its player's tags: the profile, and membership with the counts. The record of changed
 * players is left out: it follows the players not yet settled, not a tag (its own tests bound it).
 */
const COLLECTIONS = new Set(["player_profiles", "player_tag_members"]);

/**
 * The bytes of the profile and membership write commands the service sends for
 * one update of one player, until nothing of it is left unwritten or unsettled.
 */
async function bytesWritten(player: object): Promise<number> {
  const started = await startedDuring(svc.database.client, async () => {
    await svc.postOk("/v1/players/update", { players: [player] }, publicKey);
    await ownerRoundsDone(svc);
  });
  return started
    .filter((event) => WRITES.has(event.commandName) && COLLECTIONS.has(String(event.command[event.commandName])))
    .reduce((bytes, event) => bytes + BSON.calculateObjectSize(event.command), 0);
}

describe("what an update of one player writes", () => {
  it("does not grow with its tag's members: a tag of 20,000 costs at most a page of keys more than one of 100", async () => {
    const [small, large] = [
      await bytesWritten({ partner_user_id: partnerId("n", 1), tags_add: ["sml"] }),
      await bytesWritten({ partner_user_id: partnerId("n", 2), tags_add: ["lrg"] }),
    ];
    const [smallRemoved, largeRemoved] = [
      await bytesWritten({ partner_user_id: partnerId("s", 7), tags_remove: ["sml"] }),
      await bytesWritten({ partner_user_id: partnerId("l", 7), tags_remove: ["lrg"] }),
    ];
    expect(large, `given: ${small} bytes at ${SMALL} members, ${large} at ${LARGE}`).toBeLessThanOrEqual(
      small + PAGE_BYTES,
    );
    expect(largeRemoved, `taken: ${smallRemoved} at ${SMALL}, ${largeRemoved} at ${LARGE}`).toBeLessThanOrEqual(
      smallRemoved + PAGE_BYTES,
    );
  });
});
