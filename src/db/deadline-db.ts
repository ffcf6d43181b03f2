import type { Collection, Db, Document } from "mongodb";

/** Each collection method the stores call, and the position of its options argument. */
const OPTIONS_AT: Readonly<Record<string, number>> = {
  find: 1,
  findOne: 1,
  countDocuments: 1,
  aggregate: 1,
  distinct: 2,
  findOneAndUpdate: 2,
  findOneAndReplace: 2,
  findOneAndDelete: 1,
  insertOne: 1,
  insertMany: 1,
  updateOne: 2,
  updateMany: 2,
  replaceOne: 2,
  deleteOne: 1,
  deleteMany: 1,
  bulkWrite: 1,
};

/**
 * `db` whose every collection operation carries `maxTimeMS` (the database deadline) unless its caller gives one: the
 * server gives up on a command the caller stopped waiting for, instead of running it on. Driver 7 ignores
 * `timeoutMS` (it adds no `maxTimeMS` of its own), so it is added here, in one place.
 */
export function withDeadline(db: Db, maxTimeMS: number): Db {
  const collections = new Map<string, Collection<Document>>();
  return new Proxy(db, {
    get(target, property, receiver) {
      if (property !== "collection") return Reflect.get(target, property, receiver);
      return (name: string, options?: Parameters<Db["collection"]>[1]) => {
        const key = `${name}\u0000${JSON.stringify(options ?? {})}`;
        let collection = collections.get(key);
        if (!collection)
          collections.set(key, (collection = deadlineCollection(target.collection(name, options), maxTimeMS)));
        return collection;
      };
    },
  });
}

function deadlineCollection<T extends Document>(collection: Collection<T>, maxTimeMS: number): Collection<T> {
  return new Proxy(collection, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      const at = typeof property === "string" ? OPTIONS_AT[property] : undefined;
      if (at === undefined || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const given = args[at] as Record<string, unknown> | undefined;
        args[at] = { maxTimeMS, ...given };
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
