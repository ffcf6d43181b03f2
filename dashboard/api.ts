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
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, answer.code ?? "unknown", answer.message ?? res.statusText);
  return answer as T;
}

/** /readyz: the service's readiness, with the event queue's depth and lag (no key needed). */
export async function readiness(): Promise<{ status: string; events?: { lag_seconds: number; queue_depth: number } }> {
  const res = await fetch("/readyz").catch((error: Error) => {
    throw new UnreachableError(`the service did not answer (${error.message})`);
  });
  return res.json();
}
