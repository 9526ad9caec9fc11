import type { GatewayError } from "@gw/errors";
import { Agent, request, type Dispatcher } from "undici";

/**
 * What inference and tools share about calling a provider: one pooled keep-alive client per
 * service, the call with its time limits, bounded reading of error pages, and the retry policy.
 */

/**
 * One pooled, keep-alive HTTP client for every upstream of a service. Clients are never created
 * per request; undici keeps a pool per origin inside the agent.
 */
export function createUpstreamAgent(): Agent {
  return new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
    connections: null,
    pipelining: 1,
    connect: { timeout: 10_000 },
  });
}

export interface UpstreamRequest {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Time allowed until the response headers arrive; also the longest silence inside a body. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export function sendUpstream(agent: Dispatcher, req: UpstreamRequest): Promise<Dispatcher.ResponseData> {
  return request(req.url, {
    method: req.method,
    headers: req.headers,
    body: req.body,
    dispatcher: agent,
    signal: req.signal,
    headersTimeout: req.timeoutMs,
    bodyTimeout: req.timeoutMs,
  });
}

/** Reads at most `limit` bytes of an error body; a huge or endless error page is not our problem. */
export async function readBounded(body: Dispatcher.ResponseData["body"], limit = 64 * 1024): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    parts.push(buf);
    size += buf.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(parts).toString("utf8").slice(0, limit);
}

/** `${base}${path}` without a doubled slash. */
export function upstreamUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, "")}${path}`;
}

/** How hard one provider is tried: retries with exponential backoff and jitter. */
export interface RetryPolicy {
  /** Delay before the first retry; doubles for each further one, with ±50 % jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** An upstream asking to wait longer than this is not retried (the caller, or the next route, gets the error). */
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
 * The wait before retry number `retries + 1`: the upstream's retry-after (`retry-after-ms`, or
 * `retry-after` in seconds or as a date) if it gave one, else the backoff; undefined when the
 * upstream asks for longer than the policy allows.
 */
export function retryDelay(error: GatewayError, retries: number, policy: RetryPolicy): number | undefined {
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
