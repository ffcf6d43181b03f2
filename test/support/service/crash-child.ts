// Applies one players/update, or with a partner id after the project's erases that player (players/delete), and dies
// by SIGKILL before its sets are in the database (right after its profiles, or the erasure's markers: its commit
// point): the crash the start's repair of the sets must heal. Args: <mongodb uri> <db name> <project id> [partner id].
import { connectDatabase } from "../../../src/db/database.js";
import { playersOn } from "../db/round-points.js";

const [uri, dbName, projectId, erased] = process.argv.slice(2);
const database = await connectDatabase(uri, dbName);
const die = () => process.kill(process.pid, "SIGKILL");
const { players } = await playersOn(database, { point: "afterProfileWrites", fault: die });
if (erased) await players.delete(projectId, { partnerUserId: erased });
else {
  await players.update(projectId, [
    {
      partnerUserId: "crash-victim",
      tagsAdd: ["crashed"],
      tagsRemove: ["before"],
      traitsIncrement: {},
      traitsUnset: [],
    },
    { deviceId: "crash-device", tagsAdd: ["crashed"], tagsRemove: [], traitsIncrement: {}, traitsUnset: [] },
  ]);
}
process.stderr.write("the crash point was not reached\n");
process.exit(1);
