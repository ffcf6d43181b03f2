import { ApiError } from "./api.js";
import { describeError, h } from "./dom.js";

/** What an empty date-range read says: what to send. */
export const NO_EVENTS =
  "No events in these dates for this cohort. A game sends them with POST /v1/events (its public key); they show here within seconds.";

/** Told when the service refuses the signed-in key (revoked, unknown): the page goes back to sign-in. */
export const KEY_REFUSED = "dashboard-key-refused";

export interface View {
  /** The status line (loading, empty, error) and the answer's content, to place on the page. */
  status: HTMLElement;
  content: HTMLElement;
  /**
   * Sends `load`, cancelling the request before it: only the last one's answer is drawn. `draw` gives the nodes
   * to show, or null when the answer is empty (the view then says `empty`, what to send).
   */
  run<T>(load: (signal: AbortSignal) => Promise<T>, draw: (answer: T) => Node[] | null): Promise<void>;
}

/**
 * One view's requests and their states: loading (Apply disabled, the numbers dimmed), empty, the service's
 * error or unreachable (the numbers cleared: they are not the answer to what was asked).
 */
export function requestView(form: HTMLFormElement | null, empty: string): View {
  const status = h("div", { class: "status", role: "status" });
  const content = h("div", { class: "content" });
  let current: AbortController | undefined;
  const busy = (on: boolean) => {
    content.classList.toggle("stale", on);
    content.setAttribute("aria-busy", String(on));
    for (const button of form?.querySelectorAll("button[type=submit]") ?? [])
      (button as HTMLButtonElement).disabled = on;
  };
  const say = (kind: string, text: string) => {
    status.className = `status ${kind}`;
    status.setAttribute("role", kind === "error" ? "alert" : "status");
    status.textContent = text;
  };
  return {
    status,
    content,
    async run(load, draw) {
      current?.abort();
      const request = (current = new AbortController());
      busy(true);
      say("loading", "Loading…");
      try {
        const answer = await load(request.signal);
        if (request !== current) return;
        const nodes = draw(answer);
        if (nodes === null) {
          content.replaceChildren();
          say("empty", empty);
        } else {
          say("", "");
          content.replaceChildren(...nodes);
        }
      } catch (error) {
        if (request !== current) return;
        content.replaceChildren();
        say("error", describeError(error));
        if (error instanceof ApiError && error.status === 401)
          window.dispatchEvent(new CustomEvent(KEY_REFUSED, { detail: describeError(error) }));
      } finally {
        if (request === current) busy(false);
      }
    },
  };
}
