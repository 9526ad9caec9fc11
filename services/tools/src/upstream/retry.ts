import type { GatewayError } from "@gw/errors";
import { retryDelay, type CallSignal, type RetryPolicy } from "@gw/service-kit";
import type { ToolOutcome } from "./call";

/** Tool calls retry on the same provider (there is no fallback route for tools). */
export { defaultRetryPolicy, type RetryPolicy } from "@gw/service-kit";

/**
 * Runs `attempt` and retries a provider failure (5xx, unreachable) up to `maxRetries` times, after
 * the upstream's retry-after (when at most `maxRetryAfterMs`) or an exponential backoff. Not
 * retried: a 429 (the caller gets it at once, with retry-after, and its own client decides), and a
 * time-out (the provider may still be working on it, and billing it; the caller's deadline is near).
 * Nothing is retried once the caller has gone.
 */
export async function withRetries<T>(
  maxRetries: number,
  policy: RetryPolicy,
  signal: CallSignal | undefined,
  attempt: () => Promise<ToolOutcome<T>>,
): Promise<ToolOutcome<T>> {
  for (let retries = 0; ; retries++) {
    const result = await attempt();
    if (result.ok || !retryable(result.error) || retries >= maxRetries || signal?.aborted) return result;
    const delay = retryDelay(result.error, retries, policy);
    if (delay === undefined) return result;
    await policy.sleep(delay, signal);
    if (signal?.aborted) return result;
  }
}

function retryable(error: GatewayError): boolean {
  return error.retryable && error.status !== 429 && error.code !== "upstream_timeout";
}
