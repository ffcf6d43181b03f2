import { MongoNetworkError } from "mongodb";
import { expect, it } from "vitest";
import { InvalidArgumentError } from "./errors.js";
import { stepsOf, type StepTimer } from "./steps.js";

it("times each step, passes on its result or failure, and labels a failure with the code its call answers with", async () => {
  const recorded: Parameters<StepTimer["recordStep"]>[0][] = [];
  const step = stepsOf("ingest", { recordStep: (one) => recorded.push(one) });
  const refused = new InvalidArgumentError("name: too long");
  expect(await step("admit", () => 1)).toBe(1);
  await expect(step("check", () => Promise.reject(refused))).rejects.toBe(refused);
  await expect(step("names", () => Promise.reject(new MongoNetworkError("down")))).rejects.toThrow("down");
  await expect(step("enqueue", () => Promise.reject(new Error("a bug")))).rejects.toThrow("a bug");
  expect(recorded.map(({ path, step, outcome }) => `${path} ${step} ${outcome}`)).toEqual([
    "ingest admit ok",
    "ingest check invalid_argument",
    "ingest names unavailable",
    "ingest enqueue internal",
  ]);
  expect(recorded.every(({ seconds }) => seconds >= 0)).toBe(true);
});
