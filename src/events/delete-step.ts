import type { Collection, Filter } from "mongodb";

/**
 * One bounded step of a sweep: finds at most `limit` documents matching `filter` (their `_id` only), then deletes
 * those that still match. Answers the ids found: fewer than `limit` means the sweep is through.
 */
export async function deleteStep<T extends { _id: string }>(
  collection: Collection<T>,
  filter: Filter<T>,
  limit: number,
): Promise<string[]> {
  const found = await collection.find(filter, { projection: { _id: 1 }, limit }).toArray();
  const ids = found.map((doc) => doc._id as string);
  if (ids.length > 0) await collection.deleteMany({ $and: [{ _id: { $in: ids } }, filter] } as Filter<T>);
  return ids;
}
