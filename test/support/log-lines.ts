import { Writable } from "node:stream";

/** A log destination that keeps what is written to it, one entry a write (pino writes a line at a time). */
export function logLines(): { destination: Writable; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { destination, lines };
}
