// An ingest killed between drawing its sequence number and writing its segment: reserves one number of the
// project's queue, then dies by SIGKILL. Args: <mongodb uri> <db name> <project id>.
import { connectDatabase } from "../../../src/db/database.js";
import { KeyedLock } from "../../../src/db/keyed-lock.js";
import { QueueStore } from "../../../src/events/queue/queue-store.js";

const [uri, dbName, projectId] = process.argv.slice(2);
const database = await connectDatabase(uri, dbName);
const seq = await new QueueStore(database.db, new KeyedLock()).reserve(projectId);
process.stdout.write(`${seq}\n`);
process.kill(process.pid, "SIGKILL");
