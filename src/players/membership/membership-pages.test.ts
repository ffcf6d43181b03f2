import { describe, expect, it } from "vitest";
import {
  assembleBucket,
  EMPTY_BUCKET,
  membersOf,
  moveBucket,
  PAGE_KEYS,
  writeOrder,
  type MemberPage,
} from "./membership-pages.js";

const keys = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `u:${String(from + i).padStart(6, "0")}`);

describe("membership pages", () => {
  it("splits a page past PAGE_KEYS and then writes only the page a key falls in", () => {
    const grown = moveBucket(EMPTY_BUCKET, keys(0, 3 * PAGE_KEYS), [])!;
    expect(membersOf(grown.bucket)).toEqual(keys(0, 3 * PAGE_KEYS));
    expect(grown.bucket.pages.every((page) => page.members.length <= PAGE_KEYS)).toBe(true);
    expect(grown.written).toHaveLength(grown.bucket.pages.length);

    const one = moveBucket(grown.bucket, ["u:000300x"], ["u:000010"])!;
    expect(one.written).toHaveLength(2);
    const members = membersOf(one.bucket);
    expect(members).toContain("u:000300x");
    expect(members).not.toContain("u:000010");
    expect(members).toHaveLength(3 * PAGE_KEYS);
    // Pages nothing touched are the same objects: memory and writes cost only the moved ones.
    expect(one.bucket.pages.filter((page) => grown.bucket.pages.includes(page))).toHaveLength(
      grown.bucket.pages.length - 2,
    );
    expect(moveBucket(one.bucket, ["u:000300x"], ["u:000010"])).toBeNull();
  });

  it("reads each stored page up to the next one's first key, whatever order they come in", () => {
    // A split cut short after its new page was written: the old page still holds the moved keys.
    const bucket = assembleBucket([
      { low: "u:000005", members: keys(5, 10) },
      { low: "", members: keys(0, 10) },
    ]);
    expect(bucket.pages.map((page) => page.members)).toEqual([keys(0, 5), keys(5, 10)]);
    expect(assembleBucket([{ low: "u:000005", members: keys(5, 6) }]).pages[0]).toEqual({ low: "", members: [] });
  });

  it("writes a split's new pages before the page it split, so a stop between them loses no key", () => {
    const split = moveBucket(EMPTY_BUCKET, keys(0, PAGE_KEYS + 1), [])!;
    const ids = writeOrder(split.written.map((low) => `p/t/0/${low}`));
    expect(ids.at(-1)).toBe("p/t/0/");
    // Every prefix of the writes, over the old page (all the keys), still reads as every key.
    for (let written = 1; written < ids.length; written++) {
      const stored: MemberPage[] = [{ low: "", members: keys(0, PAGE_KEYS + 1) }];
      for (const id of ids.slice(0, written)) {
        const low = id.slice("p/t/0/".length);
        stored.push(split.bucket.pages.find((page) => page.low === low)!);
      }
      expect(membersOf(assembleBucket(stored))).toEqual(keys(0, PAGE_KEYS + 1));
    }
  });
});
