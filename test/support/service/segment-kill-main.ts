// The service's entry point (src/main.ts) in a process that, once sent SIGUSR2, dies by SIGKILL the next time it
// queues a segment, between reserving its sequence number and writing it: the gap an ingest killed mid-call leaves,
// which its project's worker must close.
import { SegmentStore } from "../../../src/events/queue/segment-store.js";

let armed = false;
process.on("SIGUSR2", () => (armed = true));
const insert = SegmentStore.prototype.insert;
SegmentStore.prototype.insert = async function (this: SegmentStore, ...args: Parameters<SegmentStore["insert"]>) {
  if (armed) process.kill(process.pid, "SIGKILL");
  return insert.apply(this, args);
};
await import("../../../src/main.js");
