import { queueOf, waitFor } from "../service/events.js";
import type { TestService } from "../service/service.js";

// A project as a producer sees one: 30 days of events of 15 names by a few hundred players carrying 24 tags,
// purchases with an amount summed. Drawn from a seeded generator, so every run sends the same data.

const DAY_MS = 86_400_000;
export const NAMES = [
  "session_start",
  "level_start",
  "level_complete",
  "match_start",
  "match_end",
  "purchase",
  "ad_view",
  "tutorial_step",
  "quest_complete",
  "item_equip",
  "chat_message",
  "friend_invite",
  "daily_reward",
  "shop_open",
  "login",
];
export const TAGS = [
  "vip",
  "whale",
  "beta",
  "tester",
  "team_a",
  "team_b",
  "eu",
  "na",
  "asia",
  "android",
  "ios",
  "steam",
  "organic",
  "paid_ads",
  "influencer",
  "returning",
  "churn_risk",
  "guild_member",
  "pvp",
  "pve",
  "collector",
  "speedrunner",
  "casual",
  "hardcore",
];
const PLAYERS = 300;

/** A linear congruential generator: the same numbers on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

export interface ProjectKeys {
  projectId: string;
  privateKey: string;
  publicKey: string;
}

/** Sends the players, tag labels, the summed `purchase.amount` and the events; answers once all are applied. */
export async function sendRealisticData(svc: TestService, project: ProjectKeys): Promise<void> {
  const random = seeded(42);
  const players = Array.from({ length: PLAYERS }, (_, i) => ({
    partner_user_id: `player_${String(i).padStart(3, "0")}`,
    tags: TAGS.filter((_, t) => random() < 0.6 / (1 + t / 6)),
    traits: { tier: ["bronze", "silver", "gold"][i % 3], level: 1 + (i % 40) },
  }));
  for (let i = 0; i < players.length; i += 100)
    await svc.postOk("/v1/players/update", { players: players.slice(i, i + 100) }, project.privateKey);
  for (const tag of TAGS.slice(0, 8))
    await svc.postOk(
      "/v1/players/tags/update",
      { tag, label: tag.replace("_", " ").toUpperCase(), category: "Segments" },
      project.privateKey,
    );
  await svc.postOk(
    "/v1/events/properties/update",
    { name: "purchase", property: "amount", sum: true },
    project.privateKey,
  );

  // Each day's events at hours of that UTC day, today's only before now.
  const now = svc.clock.now().getTime() - 60_000;
  const midnight = now - (now % DAY_MS);
  const events: object[] = [];
  for (const player of players) {
    const firstDay = Math.floor(random() * random() * 30); // days before today: more players start lately
    const loyalty = random();
    for (let day = firstDay; day >= 0; day--) {
      if (day !== firstDay && random() > loyalty * 0.8) continue;
      const dayStart = midnight - day * DAY_MS;
      const at = (n: number) => new Date(Math.min(dayStart + n * (DAY_MS / 6), now - n * 1000)).toISOString();
      events.push({ name: "login", partner_user_id: player.partner_user_id, timestamp: at(0) });
      for (let n = 1; n <= 4; n++) {
        const name = NAMES[Math.floor(random() * random() * (NAMES.length - 1))];
        const properties = name === "purchase" ? { amount: [0.99, 4.99, 9.99][Math.floor(random() * 3)] } : undefined;
        events.push({ name, partner_user_id: player.partner_user_id, timestamp: at(n), properties });
      }
    }
  }
  for (let i = 0; i < events.length; i += 1000)
    await svc.postOk("/v1/events", { events: events.slice(i, i + 1000) }, project.publicKey);
  await waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
    300_000,
  );
}
