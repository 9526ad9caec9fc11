import { describe, expect, it } from "vitest";
import { driftWarning, relativeDrift } from "./drift";

describe("relativeDrift", () => {
  it("is the relative change from the first to the second half", () => {
    expect(relativeDrift({ firstHalfP50: 2, secondHalfP50: 1.5 })).toBeCloseTo(-0.25, 9);
    expect(relativeDrift({ firstHalfP50: 1, secondHalfP50: 1.2 })).toBeCloseTo(0.2, 9);
    expect(relativeDrift({ firstHalfP50: 0, secondHalfP50: 1 })).toBe(0);
  });
});

describe("driftWarning", () => {
  it("stays quiet within the threshold", () => {
    expect(driftWarning("gateway", { firstHalfP50: 1, secondHalfP50: 0.95 })).toBeUndefined();
    expect(driftWarning("gateway", { firstHalfP50: 1, secondHalfP50: 1.1 })).toBeUndefined();
  });

  it("ignores large relative changes that are tiny in absolute terms", () => {
    expect(driftWarning("direct", { firstHalfP50: 0.062, secondHalfP50: 0.038 })).toBeUndefined();
    expect(driftWarning("direct", { firstHalfP50: 0.118, secondHalfP50: 0.04 })).toContain("direct p50");
  });

  it("says a faster second half means the warm-up was too short", () => {
    const text = driftWarning("gateway", { firstHalfP50: 1.4, secondHalfP50: 0.9 });
    expect(text).toContain("gateway p50 went from 1.400 ms");
    expect(text).toContain("0.900 ms");
    expect(text).toContain("-36 %");
    expect(text).toContain("raise --warmup");
  });

  it("says a slower second half is something else", () => {
    expect(driftWarning("direct", { firstHalfP50: 0.1, secondHalfP50: 0.2 })).toContain("getting slower");
  });
});
