import { post, readiness } from "../api.js";
import { h, table } from "../dom.js";
import { cohortFilterForm, dateRangeForm } from "../filters.js";
import { filterForm } from "../url-state.js";
import { NO_EVENTS, requestView } from "../view.js";

/** The event queue's depth and lag, and the range's event names with their counts. */
export function eventsPage(root: HTMLElement): void {
  const range = dateRangeForm(30);
  const cohort = cohortFilterForm();
  const form = filterForm(() => void load(), range.element, cohort.element);
  const view = requestView(form, NO_EVENTS);
  const load = () =>
    view.run(
      async (signal) => {
        const [ready, answer] = await Promise.all([
          readiness(),
          post<{ names: { name: string; events: string }[] }>(
            "events/names",
            { ...range.value(), ...cohort.value() },
            signal,
          ),
        ]);
        return { ready, names: answer.names };
      },
      ({ ready, names }) => {
        const queue = ready.events
          ? `Queue: ${ready.events.queue_depth.toLocaleString("en-US")} events waiting, the oldest ${Math.round(ready.events.lag_seconds)} s old`
          : `Queue: not reported (service ${ready.status})`;
        if (names.length === 0) return null;
        return [
          h("p", { class: "queue" }, queue),
          table(
            ["name", "events"],
            names.map((entry) => [entry.name, Number(entry.events)]),
            "names-table",
          ),
        ];
      },
    );
  root.replaceChildren(h("h1", {}, "Events"), form, view.status, view.content);
  void load();
}
