// The one way the dashboard talks to the service: POST to the public /v1 API with the signed-in key.

// sessionStorage: the key lives as long as the tab, never in localStorage or a URL.
const KEY_ITEM = "platform-dashboard-api-key";

export type KeyType = "admin" | "reader" | "private" | "other";

export const apiKey = {
  get: (): string | null => sessionStorage.getItem(KEY_ITEM),
  set: (key: string): void => sessionStorage.setItem(KEY_ITEM, key),
  clear: (): void => sessionStorage.removeItem(KEY_ITEM),
  /** The key's type by its prefix (docs/api.md "API keys and scopes"). */
  type: (): KeyType => {
    const prefix = apiKey.get()?.split("_", 1)[0];
    return prefix === "adm" ? "admin" : prefix === "rk" ? "reader" : prefix === "sk" ? "private" : "other";
  },
};

/** The service's error answer, `{code, message}`, shown as it is. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The service did not answer at all (stopped, network down): no status, no message of its own. */
export class UnreachableError extends Error {}

export async function post<T>(path: string, body: object, signal?: AbortSignal): Promise<T> {
  const res = await answered(path, body, signal);
  return (await res.json().catch(() => ({}))) as T;
}

/**
 * A streaming call's answer (application/x-ndjson): each line's JSON handed to `onLine` as it arrives, read through
 * the body's reader, so a million lines are never held at once. A stream cut short by the service (an error after
 * its first line) rejects, as does a lost connection.
 */
export async function postLines<T>(path: string, body: object, onLine: (line: T) => void, signal?: AbortSignal) {
  const res = await answered(path, body, signal);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let rest = "";
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      const lines = (rest + chunk.value).split("\n");
      rest = lines.pop()!;
      for (const line of lines) onLine(JSON.parse(line) as T);
    }
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new UnreachableError(`the answer was cut short (${(error as Error).message})`);
  }
}

/** A successful answer to POST /v1/<path> with the signed-in key (in its header, never the URL), else the error. */
async function answered(path: string, body: object, signal?: AbortSignal): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(`/v1/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": apiKey.get() ?? "" },
      body: JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new UnreachableError(`the service did not answer (${(error as Error).message})`);
  }
  if (res.ok) return res;
  const answer = await res.json().catch(() => ({}));
  throw new ApiError(res.status, answer.code ?? "unknown", answer.message ?? res.statusText);
}

/** /readyz: the service's readiness, with the event queue's depth and lag (no key needed). */
export async function readiness(): Promise<{ status: string; events?: { lag_seconds: number; queue_depth: number } }> {
  const res = await fetch("/readyz").catch((error: Error) => {
    throw new UnreachableError(`the service did not answer (${error.message})`);
  });
  return res.json();
}
