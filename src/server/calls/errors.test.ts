import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { codeName } from "./errors.js";

describe("codeName", () => {
  it("names codes the way the Connect protocol and the /v1 error bodies do", () => {
    expect(codeName(Code.InvalidArgument)).toBe("invalid_argument");
    expect(codeName(Code.Unauthenticated)).toBe("unauthenticated");
    expect(codeName(Code.ResourceExhausted)).toBe("resource_exhausted");
    expect(codeName(Code.DeadlineExceeded)).toBe("deadline_exceeded");
  });
});
