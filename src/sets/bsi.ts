import type { Bitmap } from "./bitmap.js";

/**
 * A bit-sliced column of non-negative integers beside a set: slice k holds the members whose value has bit k. So the
 * total of the values of any set X of members is Σ 2^k |X ∩ slice k|, one native intersection count a slice, and a
 * member's value is read or written a slice at a time.
 */
export type Slices = Bitmap[];

/** The value of `member` (0 when it has none). */
export function valueOf(slices: Slices, member: number): number {
  let value = 0;
  for (let k = 0; k < slices.length; k++) if (slices[k].has(member)) value += 2 ** k;
  return value;
}

/** Sets `member`'s value; slices past the highest bit in use are dropped. `make` makes an empty slice. */
export function setValue(slices: Slices, member: number, value: number, make: () => Bitmap): void {
  for (let k = 0, rest = value; rest > 0 || k < slices.length; k++, rest = Math.floor(rest / 2)) {
    if (rest % 2 === 1) {
      while (slices.length <= k) slices.push(make());
      slices[k].add(member);
    } else if (k < slices.length) slices[k].remove(member);
  }
  while (slices.length > 0 && slices.at(-1)!.isEmpty) slices.pop();
}
