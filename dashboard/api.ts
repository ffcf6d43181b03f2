// The one way the dashboard talks to the service: POST to the public /v1 API with the signed-in key.

// sessionStorage: the key lives as long as the tab, never in localStorage or a URL.
const KEY_ITEM = "platform-dashboard-api-key";

export const apiKey = {
  get: (): string | null => sessionStorage.getItem(KEY_ITEM),
  set: (key: string): void => sessionStorage.setItem(KEY_ITEM, key),
  clear: (): void => sessionStorage.removeItem(KEY_ITEM),
  isAdmin: (): boolean => apiKey.get()?.startsWith("adm_") ?? false,
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

export async function post<T>(path: string, body: object): Promise<T> {
  const res = await fetch(`/v1/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": apiKey.get() ?? "" },
    body: JSON.stringify(body),
  });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, answer.code ?? "unknown", answer.message ?? res.statusText);
  return answer as T;
}

/** /readyz: the service's readiness, with the event queue's depth and lag (no key needed). */
export async function readiness(): Promise<{ status: string; events?: { lag_seconds: number; queue_depth: number } }> {
  const res = await fetch("/readyz");
  return res.json();
}
