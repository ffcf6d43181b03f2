import { post, readiness } from "../api.js";
import { h, showing, table } from "../dom.js";
import { cohortFilterForm, dateRangeForm } from "../filters.js";

/** The event queue's depth and lag, and the range's event names with their counts. */
export function eventsPage(root: HTMLElement): void {
  const queue = h("p", { class: "queue" });
  const range = dateRangeForm();
  const cohort = cohortFilterForm();
  const status = h("div", { class: "status" });
  const names = h("div", {});
  const load = async () => {
    const ready = await readiness();
    queue.textContent = ready.events
      ? `Queue: ${ready.events.queue_depth} events waiting, the oldest ${Math.round(ready.events.lag_seconds)} s old`
      : `Queue: not reported (service ${ready.status})`;
    const answer = await showing(status, () =>
      post<{ names: { name: string; events: string }[] }>("events/names", { ...range.value(), ...cohort.value() }),
    );
    if (answer)
      names.replaceChildren(
        table(
          ["name", "events"],
          answer.names.map((entry) => [entry.name, entry.events]),
          "names-table",
        ),
      );
  };
  root.replaceChildren(
    h("h1", {}, "Events"),
    queue,
    h(
      "form",
      { class: "controls", onsubmit: (event) => (event.preventDefault(), void load()) },
      range.element,
      cohort.element,
      h("button", { type: "submit" }, "Show"),
    ),
    status,
    names,
  );
  void load();
}
