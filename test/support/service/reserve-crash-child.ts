// An ingest killed between drawing its sequence number (with its events counted as accepted) and writing its
// segment: reserves one number for 600 events, then dies by SIGKILL. Args: <mongodb uri> <db name>.
import { connectDatabase } from "../../../src/db/database.js";
import { QueueStateStore } from "../../../src/events/queue/queue.js";

const [uri, dbName] = process.argv.slice(2);
const database = await connectDatabase(uri, dbName);
const seq = await new QueueStateStore(database.db).reserve(600);
process.stdout.write(`${seq}\n`);
process.kill(process.pid, "SIGKILL");
