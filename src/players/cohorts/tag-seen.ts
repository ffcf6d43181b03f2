import { projectScopedId } from "../../db/ids.js";
import type { ChunkStore } from "../../sets/chunk-store.js";
import type { Registration } from "../rounds/registration.js";

/** Per tag id, the last time a player was given the tag. */
export type SeenTimes = Map<number, Date>;

export const seenCodec = {
  decode: (doc: { seen?: string } | null): SeenTimes =>
    new Map(
      Object.entries(JSON.parse(doc?.seen ?? "{}") as Record<string, string>).map(([id, at]) => [
        Number(id),
        new Date(at),
      ]),
    ),
  encode: (seen: SeenTimes) => ({ seen: JSON.stringify(Object.fromEntries(seen)) }),
  bytes: (seen: SeenTimes) => 64 + 48 * seen.size,
  clone: (seen: SeenTimes): SeenTimes => new Map(seen),
};

/** When each tag was last given (a tag record's last_seen_at), one document a project: `player_tag_seen`. */
export class TagSeen {
  constructor(
    private readonly store: ChunkStore<SeenTimes>,
    private readonly registration: Registration,
  ) {}

  /** The tags of `tags` were given at `now`. */
  async given(projectId: string, tags: ReadonlySet<string>, now: Date): Promise<void> {
    if (tags.size === 0) return;
    const ids = [...(await this.registration.tagIds(projectId, [...tags])).values()];
    await this.store.update(
      projectId,
      new Map([
        [
          this.id(projectId),
          (seen: SeenTimes) => {
            let changed = false;
            for (const id of ids) {
              if ((seen.get(id)?.getTime() ?? 0) >= now.getTime()) continue;
              seen.set(id, now);
              changed = true;
            }
            return changed;
          },
        ],
      ]),
    );
  }

  async read(projectId: string): Promise<SeenTimes> {
    return (await this.store.read([this.id(projectId)]))[0];
  }

  private id(projectId: string): string {
    return projectScopedId(projectId, "seen");
  }
}
