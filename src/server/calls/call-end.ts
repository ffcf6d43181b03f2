import { ConnectError, type StreamResponse, type UnaryResponse } from "@connectrpc/connect";
import { codeName } from "./errors.js";

/**
 * Reports the code a call ends with to `ended`: a unary answer's at once; a
 * server stream's when its last message is taken (`ok`), when it fails (its
 * code), or when the client goes away before the end (`canceled`), so a
 * stream is counted and timed whole, not at its first message.
 */
export function whenEnded<Res extends UnaryResponse | StreamResponse>(res: Res, ended: (code: string) => void): Res {
  if (!res.stream) {
    ended("ok");
    return res;
  }
  return { ...res, message: watched(res.message, ended) };
}

async function* watched<M>(messages: AsyncIterable<M>, ended: (code: string) => void): AsyncGenerator<M> {
  let code = "canceled";
  try {
    yield* messages;
    code = "ok";
  } catch (error) {
    code = codeName(ConnectError.from(error).code);
    throw error;
  } finally {
    ended(code);
  }
}
