import { describe, expect, it } from "vitest";
import { decideExperiment, type Experiment, type ExperimentInput } from "./experiment.js";

const input = (change: Partial<ExperimentInput> = {}): ExperimentInput => ({
  name: "exp",
  variants: [
    { name: "a", weight: 1 },
    { name: "b", weight: 1 },
  ],
  control: "",
  tags: [],
  tagsMatch: "",
  tagsNone: [],
  state: "draft",
  ...change,
});

describe("decideExperiment", () => {
  it("makes the first variant the control, and marks an experiment that runs as having run", () => {
    const draft = decideExperiment(input(), null);
    expect(draft).toMatchObject({ control: "a", state: "draft", hasRun: false });
    const running = decideExperiment(input({ variants: [], state: "running" }), draft);
    expect(running).toMatchObject({ variants: draft.variants, state: "running", hasRun: true });
    const stopped = decideExperiment(input({ variants: [], state: "stopped" }), running);
    expect(stopped).toMatchObject({ state: "stopped", hasRun: true });
  });

  it.each<[string, Partial<ExperimentInput>, RegExp]>([
    [
      "a weight of NaN",
      {
        variants: [
          { name: "a", weight: Number.NaN },
          { name: "b", weight: 1 },
        ],
      },
      /^variants\[0\]\.weight: /,
    ],
    [
      "an infinite weight",
      {
        variants: [
          { name: "a", weight: Infinity },
          { name: "b", weight: 1 },
        ],
      },
      /^variants\[0\]\.weight: /,
    ],
    [
      "a variant named twice",
      {
        variants: [
          { name: "a", weight: 1 },
          { name: "a", weight: 2 },
        ],
      },
      /^variants\[1\]\.name: /,
    ],
    ["a control that is no variant", { control: "z" }, /^control: /],
    ["a traits filter of a nested value", { traits: { tier: { a: 1 } } }, /^traits: /],
  ])("refuses %s", (_case, change, message) => {
    expect(() => decideExperiment(input(change), null)).toThrow(message);
  });

  it("keeps the variants' names of an experiment that has run, and never takes it back to draft", () => {
    const ran: Experiment = { ...decideExperiment(input({ state: "running" }), null), state: "stopped" };
    const renamed = [
      { name: "a", weight: 1 },
      { name: "c", weight: 1 },
    ];
    expect(() => decideExperiment(input({ variants: renamed, state: "stopped" }), ran)).toThrow(/^variants: /);
    expect(() => decideExperiment(input({ variants: [], state: "draft" }), ran)).toThrow(/^state: /);
    const reweighed = [
      { name: "b", weight: 5 },
      { name: "a", weight: 1 },
    ];
    const changed = decideExperiment(input({ variants: reweighed, state: "running" }), ran);
    expect(changed.variants).toEqual(reweighed);
    expect(changed.control).toBe("b");
  });
});
