import { afterAll, beforeAll, inject } from "vitest";
import { connectDatabase, type Database } from "../../../src/db/database.js";

/** A database of the run's engine of the suite's own, dropped after its tests; the answer gives it once they run. */
export function scratchDatabase(name: string, fill?: (database: Database) => Promise<unknown>): () => Database {
  let database: Database | undefined;
  beforeAll(async () => {
    database = await connectDatabase(inject("mongodbUri"), `${name}_${process.pid}`);
    await fill?.(database);
  });
  afterAll(async () => {
    await database?.db.dropDatabase();
    await database?.close();
  });
  return () => database!;
}
