import { describe, expect, it } from "vitest";
import type { PlanLimitsTable } from "@gw/config";
import { createLogger } from "@gw/logger";
import { createMetrics } from "@gw/service-kit";
import type { KeyPrincipal } from "../store/identity-store";
import { testPrincipal } from "../testing/principal";
import { MemoryLimiter } from "./memory-limiter";
import { formatDuration, rateLimitError, RateLimitGate } from "./rate-limit-gate";
import type { Limiter } from "./types";

const plans: PlanLimitsTable = {
  plus: { requests_per_minute: 60, tokens_per_minute: 1000 },
  pro: { requests_per_minute: 600, tokens_per_minute: 10_000 },
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 100_000 },
};
const logger = createLogger({ service: "gate-test", level: "silent" });

function principal(workspaceLimits: KeyPrincipal["keyLimits"], keyLimits: KeyPrincipal["keyLimits"], plan: "plus" | "pro" = "plus"): KeyPrincipal {
  return testPrincipal({ keyLimits }, { plan, limits: workspaceLimits });
}

const broken: Limiter = {
  kind: "redis",
  admit: () => Promise.reject(new Error("connection refused")),
  release: () => Promise.reject(new Error("connection refused")),
  settle: () => Promise.reject(new Error("connection refused")),
  ping: () => Promise.reject(new Error("connection refused")),
  close: async () => {},
};

describe("RateLimitGate.limitsFor", () => {
  const gate = new RateLimitGate(new MemoryLimiter({ windowMs: 60_000, buckets: 60 }), plans, "open", logger, createMetrics("ingress", { defaults: false }));

  it("when nothing is overridden, then both scopes get the plan's limits", () => {
    expect(gate.limitsFor(principal({}, {}, "pro"))).toEqual({ workspace: { requests: 600, tokens: 10_000 }, key: { requests: 600, tokens: 10_000 } });
  });

  it("when the workspace and the key override, then the key narrows the workspace and can never widen it", () => {
    expect(gate.limitsFor(principal({ requests_per_minute: 100 }, { requests_per_minute: 10 }))).toEqual({
      workspace: { requests: 100, tokens: 1000 },
      key: { requests: 10, tokens: 1000 },
    });
    // A key set wider before its workspace was lowered is held to the workspace's limit.
    expect(gate.limitsFor(principal({ tokens_per_minute: 500 }, { tokens_per_minute: 900 })).key.tokens).toBe(500);
  });
});

describe("RateLimitGate when the limiter fails", () => {
  it("when failing open, then the request is let through and counted", async () => {
    const metrics = createMetrics("ingress", { defaults: false });
    const gate = new RateLimitGate(broken, plans, "open", logger, metrics);
    expect(await gate.admit(principal({}, {}), 10)).toBeUndefined();
    expect(await metrics.registry.metrics()).toMatch(/gw_ratelimit_unavailable_total\{mode="open"[^}]*\} 1\n/);
  });

  it("when failing closed, then the request gets a retryable 503", async () => {
    const gate = new RateLimitGate(broken, plans, "closed", logger, createMetrics("ingress", { defaults: false }));
    await expect(gate.admit(principal({}, {}), 10)).rejects.toMatchObject({ code: "upstream_unavailable", status: 503, retryable: true });
  });
});

describe("rateLimitError", () => {
  it("when a denial can clear, then the 429 says when, in seconds and milliseconds, with the OpenAI type", () => {
    const err = rateLimitError({ scope: "key", dimension: "tokens", limit: 1000, used: 900, requested: 200, retryAfterMs: 8640 }, 60_000);
    expect(err).toMatchObject({ status: 429, code: "rate_limit_exceeded", type: "tokens", headers: { "retry-after": "9", "retry-after-ms": "8640" } });
    expect(err.message).toBe("Rate limit reached for tokens per minute (TPM) on this API key: limit 1000, used 900, requested 200. Please try again in 8.64s.");
    expect(err.toEnvelope("anthropic").error.type).toBe("rate_limit_error");
  });

  it("when the window is not a minute, then the message names the window instead of per minute", () => {
    const err = rateLimitError({ scope: "workspace", dimension: "requests", limit: 2, used: 2, requested: 1, retryAfterMs: 100 }, 3000);
    expect(err.message).toMatch(/^Rate limit reached for requests per 3s on this workspace/);
  });
});

describe("formatDuration", () => {
  it("when given milliseconds, then it writes OpenAI's duration style", () => {
    expect([0, 20, 999, 1000, 8640, 59_999, 60_000, 179_560, 360_000].map(formatDuration)).toEqual([
      "0ms",
      "20ms",
      "999ms",
      "1s",
      "8.64s",
      "59.999s",
      "1m0s",
      "2m59.56s",
      "6m0s",
    ]);
  });
});
