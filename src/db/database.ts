import { MongoClient, type Db } from "mongodb";

/** An open connection to the service's database. */
export interface Database {
  client: MongoClient;
  db: Db;
  /**
   * True on FerretDB, which lacks TTL indexes, partial indexes, `$lookup`,
   * transactions and pipeline updates; stores pick their fallbacks from it.
   */
  isFerretDb: boolean;
  close(): Promise<void>;
}

export async function connectDatabase(uri: string, dbName: string): Promise<Database> {
  // monitorCommands: the service times every command for its metrics (src/server/metrics.ts).
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000, monitorCommands: true });
  await client.connect();
  const db = client.db(dbName);
  const buildInfo = await db.admin().command({ buildInfo: 1 });
  return {
    client,
    db,
    isFerretDb: "ferretdbVersion" in buildInfo,
    close: () => client.close(),
  };
}
