// A page's filters live in the URL's fragment after its name (#trends?from=...&names=login), so a view can be
// shared; the key never does.

export function currentRoute(): { page: string; params: URLSearchParams } {
  const [page, query = ""] = location.hash.slice(1).split("?", 2);
  return { page, params: new URLSearchParams(query) };
}

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
const controlsOf = (form: HTMLFormElement) =>
  [...form.elements].filter(
    (element): element is Control =>
      (element instanceof HTMLInputElement ||
        element instanceof HTMLSelectElement ||
        element instanceof HTMLTextAreaElement) &&
      element.name !== "",
  );

/** Sets the form's named controls from the URL (a checkbox is on when its name is there). */
export function restoreForm(form: HTMLFormElement): void {
  const { params } = currentRoute();
  if ([...params.keys()].length === 0) return; // a page opened without filters keeps its defaults
  for (const control of controlsOf(form)) {
    if (control instanceof HTMLInputElement && control.type === "checkbox") control.checked = params.has(control.name);
    else if (params.has(control.name)) control.value = params.get(control.name)!;
  }
}

/** Writes the form's controls into the URL, without a new history entry or a page reload. */
export function saveForm(form: HTMLFormElement, extra: Record<string, string> = {}): void {
  const params = new URLSearchParams();
  for (const control of controlsOf(form)) {
    if (control instanceof HTMLInputElement && control.type === "checkbox") {
      if (control.checked) params.set(control.name, "1");
    } else if (control.value !== "") params.set(control.name, control.value);
  }
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  history.replaceState(null, "", `#${currentRoute().page}?${params}`);
}

/** A page's filter form: its controls set from the URL now, and on Apply written back to it before `apply`. */
export function filterForm(apply: () => void, ...children: HTMLElement[]): HTMLFormElement {
  const form = document.createElement("form");
  form.className = "controls";
  const submit = document.createElement("button");
  submit.type = "submit";
  submit.textContent = "Apply";
  form.append(...children, submit);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    saveForm(form);
    apply();
  });
  restoreForm(form);
  return form;
}
