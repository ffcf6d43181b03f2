// Applies one players/update and dies by SIGKILL right after its profiles are written, before their tag
// membership and counts are: the crash the membership repair pass must heal. Args: <mongodb uri> <db name> <project id>.
import { connectDatabase } from "../../src/db/database.js";
import { engineOf } from "../../src/db/engine.js";
import { Players } from "../../src/players/players.js";
import { createPlayerStores } from "../../src/players/stores.js";
import { systemClock } from "../../src/clock.js";
import { atRoundPoint } from "./round-points.js";

const [uri, dbName, projectId] = process.argv.slice(2);
const database = await connectDatabase(uri, dbName);
const stores = atRoundPoint(createPlayerStores(database.db, engineOf(database, 0)), "afterProfileWrites", () =>
  process.kill(process.pid, "SIGKILL"),
);
const players = new Players({ stores, clock: systemClock });
await players.update(projectId, [
  { partnerUserId: "crash-victim", tagsAdd: ["crashed"], tagsRemove: ["before"], traitsIncrement: {}, traitsUnset: [] },
  { deviceId: "crash-device", tagsAdd: ["crashed"], tagsRemove: [], traitsIncrement: {}, traitsUnset: [] },
]);
process.stderr.write("the fault point did not fire\n");
process.exit(1);
