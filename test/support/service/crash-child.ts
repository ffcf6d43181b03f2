// Applies one players/update and dies by SIGKILL before its tag membership and counts are in the database: the
// crash the membership repair pass must heal. Args: <mongodb uri> <db name> <project id> <when>, where <when> is
// `afterProfileWrites` (right after the profiles, before membership: no owner's memory) or `writtenBehind` (the
// owner's memory holds membership, to be written behind: right after the update answered).
import { connectDatabase } from "../../../src/db/database.js";
import { engineOf } from "../../../src/db/engine.js";
import { Players } from "../../../src/players/players.js";
import { createPlayerStores } from "../../../src/players/storage/stores.js";
import { systemClock } from "../../../src/clock.js";
import { atRoundPoint } from "../db/round-points.js";

const [uri, dbName, projectId, when] = process.argv.slice(2);
const database = await connectDatabase(uri, dbName);
const die = () => process.kill(process.pid, "SIGKILL");
const stores =
  when === "writtenBehind"
    ? createPlayerStores(database.db, engineOf(database, 64 * 2 ** 20))
    : atRoundPoint(createPlayerStores(database.db, engineOf(database, 0)), "afterProfileWrites", die);
const players = new Players({ stores, clock: systemClock });
await players.update(projectId, [
  { partnerUserId: "crash-victim", tagsAdd: ["crashed"], tagsRemove: ["before"], traitsIncrement: {}, traitsUnset: [] },
  { deviceId: "crash-device", tagsAdd: ["crashed"], tagsRemove: [], traitsIncrement: {}, traitsUnset: [] },
]);
if (when === "writtenBehind" && stores.membership.waitingWrites > 0) die();
process.stderr.write("the crash point was not reached\n");
process.exit(1);
