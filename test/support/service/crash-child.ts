// Applies one players/update and dies by SIGKILL before its sets are in the database (right after its profiles):
// the crash the start's repair of the sets must heal. Args: <mongodb uri> <db name> <project id>.
import { connectDatabase } from "../../../src/db/database.js";
import { playersOn } from "../db/round-points.js";

const [uri, dbName, projectId] = process.argv.slice(2);
const database = await connectDatabase(uri, dbName);
const die = () => process.kill(process.pid, "SIGKILL");
const { players } = await playersOn(database, { point: "afterProfileWrites", fault: die });
await players.update(projectId, [
  { partnerUserId: "crash-victim", tagsAdd: ["crashed"], tagsRemove: ["before"], traitsIncrement: {}, traitsUnset: [] },
  { deviceId: "crash-device", tagsAdd: ["crashed"], tagsRemove: [], traitsIncrement: {}, traitsUnset: [] },
]);
process.stderr.write("the crash point was not reached\n");
process.exit(1);
