import type { PlanLimitsTable } from "@gw/config";
import { describe, expect, it } from "vitest";
import { effectiveWorkspaceLimits } from "./plan-limits";

const plans: PlanLimitsTable = {
  plus: { requests_per_minute: 60, tokens_per_minute: 100_000 },
  pro: { requests_per_minute: 600, tokens_per_minute: 1_000_000 },
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10_000_000 },
};

describe("effectiveWorkspaceLimits", () => {
  it("when the workspace has no overrides, then both limits are its plan's defaults", () => {
    expect(effectiveWorkspaceLimits(plans, { plan: "plus", limits: {} })).toEqual({ requests_per_minute: 60, tokens_per_minute: 100_000 });
    expect(effectiveWorkspaceLimits(plans, { plan: "enterprise", limits: {} })).toEqual({
      requests_per_minute: 6000,
      tokens_per_minute: 10_000_000,
    });
  });

  it("when the workspace overrides one limit, then that one is its own and the other the plan's", () => {
    expect(effectiveWorkspaceLimits(plans, { plan: "pro", limits: { requests_per_minute: 5 } })).toEqual({
      requests_per_minute: 5,
      tokens_per_minute: 1_000_000,
    });
    expect(effectiveWorkspaceLimits(plans, { plan: "pro", limits: { tokens_per_minute: 7 } })).toEqual({
      requests_per_minute: 600,
      tokens_per_minute: 7,
    });
  });

  it("when the workspace overrides both, then the plan does not matter, even above the plan's defaults", () => {
    const limits = { requests_per_minute: 9000, tokens_per_minute: 1 };
    expect(effectiveWorkspaceLimits(plans, { plan: "plus", limits })).toEqual(limits);
  });
});
