import type { Collection, Filter, WithId } from "mongodb";
import { projectIdRange } from "./ids.js";

/**
 * Every document of one project (`_id` a projectScopedId), read by the project's `_id` range from the `_id` index in
 * one streaming read, each converted as its batch arrives, so the raw answer is never held whole beside what it
 * becomes. Batches are the driver's and the engine's default (FerretDB: 250 documents a `getMore`, a size its
 * replies hold whatever the documents; larger batches measured no faster, its decoding of each document being the cost).
 */
export async function scanProject<T extends { _id: string }, R>(
  collection: Collection<T>,
  projectId: string,
  convert: (doc: WithId<T>) => R,
): Promise<R[]> {
  const found: R[] = [];
  for await (const doc of collection.find({ _id: projectIdRange(projectId) } as Filter<T>)) found.push(convert(doc));
  return found;
}
