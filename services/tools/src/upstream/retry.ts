import type { GatewayError } from "@gw/errors";
import type { ToolOutcome } from "./call";

/** How a tool call is retried on the same provider (there is no fallback route for tools). */
export interface RetryPolicy {
  /** Delay before the first retry; doubles for each further one, with ±50 % jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** An upstream asking to wait longer than this is not retried: the caller gets the error at once. */
  maxRetryAfterMs: number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
}

export const defaultRetryPolicy: RetryPolicy = {
  baseDelayMs: 250,
  maxDelayMs: 4_000,
  maxRetryAfterMs: 10_000,
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    }),
  random: Math.random,
};

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
  signal: AbortSignal | undefined,
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

function retryDelay(error: GatewayError, retries: number, policy: RetryPolicy): number | undefined {
  const asked = retryAfterMs(error.headers);
  if (asked !== undefined) return asked <= policy.maxRetryAfterMs ? asked : undefined;
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retries);
  return Math.round(backoff * (0.5 + policy.random()));
}

function retryAfterMs(headers: Record<string, string>): number | undefined {
  const ms = headers["retry-after-ms"];
  if (ms !== undefined && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const raw = headers["retry-after"];
  if (raw === undefined) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
