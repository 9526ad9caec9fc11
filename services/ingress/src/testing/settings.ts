import type { PlanLimitsTable } from "@gw/config";
import type { IngressSettings, RateLimitSettings } from "../service";

/** In-memory limits of this process, failing open: what most tests of the door want. */
export const memoryRateLimits: RateLimitSettings = { redisUrl: undefined, prefix: "", windowMs: 60_000, failureMode: "open", timeoutMs: 500 };

/**
 * An ingress for a test: both ports on free ones of 127.0.0.1, every backend at `backendUrl`, a body
 * limit of 1 MiB, keys cached for a minute, in-memory limits; `more` changes or adds anything.
 */
export function testIngressSettings(
  required: { adminToken: string; internalSecret: string; backendUrl: string; plans: PlanLimitsTable },
  more: Partial<IngressSettings> = {},
): IngressSettings {
  const { backendUrl, ...rest } = required;
  return {
    host: "127.0.0.1",
    port: 0,
    adminPort: 0,
    backends: { inference: backendUrl, tools: backendUrl, jobs: backendUrl },
    bodyLimitBytes: 1024 * 1024,
    keyCacheTtlMs: 60_000,
    rateLimits: memoryRateLimits,
    ...rest,
    ...more,
  };
}
