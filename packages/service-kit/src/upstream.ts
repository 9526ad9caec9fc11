import type { IncomingHttpHeaders } from "node:http";
import type { GatewayError } from "@gw/errors";
import { Agent, errors, request, type Dispatcher } from "undici";
import { onAbort, type CallSignal } from "./caller-gone";

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
  signal?: CallSignal;
  /**
   * Read the whole answer before resolving, for calls that expect one JSON document (never a
   * stream): see `sendBuffered`.
   */
  buffered?: boolean;
  /** With `buffered`: the most the answer may hold (default `bufferedAnswerLimitBytes`). */
  maxAnswerBytes?: number;
}

/** An answer's body: undici's stream, or the whole answer already read. */
export interface UpstreamBody extends AsyncIterable<Buffer> {
  json(): Promise<unknown>;
  text(): Promise<string>;
  destroy(): unknown;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
}

/**
 * One call. It resolves when the headers are in, with the body to read as a stream, or, with
 * `buffered`, once the whole body is in. Failures to get an answer reject with undici's errors
 * (their `code` tells a time-out from a refused connection) or with the signal's reason.
 */
export function sendUpstream(agent: Dispatcher, req: UpstreamRequest): Promise<UpstreamResponse> {
  if (req.buffered) return sendBuffered(agent, req);
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

/** The most a buffered answer may hold by default; a larger one fails as undici's own size limit does. */
export const bufferedAnswerLimitBytes = 256 * 1024 * 1024;

/**
 * A call whose whole answer is collected by a plain dispatch handler into one Buffer. undici's
 * `request()` wraps every call in an async resource, a Readable and a promise per body method;
 * for an answer that is read whole anyway that is work for nothing: measured against a local
 * upstream, 25 µs of CPU and 40 B left for the old generation per call this way, against 50 µs
 * and 1.1 KB through `request()`.
 */
function sendBuffered(agent: Dispatcher, req: UpstreamRequest): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    const url = new URL(req.url);
    const signal = req.signal;
    let statusCode = 0;
    let headers: IncomingHttpHeaders = {};
    let parts: Buffer[] = [];
    let size = 0;
    const limit = req.maxAnswerBytes ?? bufferedAnswerLimitBytes;
    let stopListening: (() => void) | undefined;
    agent.dispatch(
      {
        origin: url.origin,
        path: url.pathname + url.search,
        method: req.method,
        headers: req.headers,
        body: req.body,
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs,
      },
      {
        onRequestStart(controller) {
          if (signal) stopListening = onAbort(signal, () => controller.abort(abortReason(signal)));
        },
        onResponseStart(_controller, status, responseHeaders) {
          statusCode = status;
          headers = responseHeaders;
        },
        onResponseData(controller, chunk) {
          size += chunk.length;
          if (size > limit) {
            parts = [];
            controller.abort(new errors.ResponseExceededMaxSizeError(`The answer is over ${limit} bytes`));
            return;
          }
          parts.push(chunk);
        },
        onResponseEnd() {
          stopListening?.();
          resolve({ statusCode, headers, body: new BufferedBody(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)) });
        },
        onResponseError(_controller, err) {
          stopListening?.();
          reject(err);
        },
      },
    );
  });
}

function abortReason(signal: CallSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new errors.RequestAbortedError();
}

/** A body read whole: the same reading methods as undici's, over one Buffer. */
export class BufferedBody implements UpstreamBody {
  constructor(private readonly bytes: Buffer) {}

  async json(): Promise<unknown> {
    return JSON.parse(this.bytes.toString("utf8"));
  }

  async text(): Promise<string> {
    return this.bytes.toString("utf8");
  }

  destroy(): void {}

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    if (this.bytes.length > 0) yield this.bytes;
  }
}

/** Reads at most `limit` bytes of an error body; a huge or endless error page is not our problem. */
export async function readBounded(body: UpstreamBody, limit = 64 * 1024): Promise<string> {
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
  sleep(ms: number, signal?: CallSignal): Promise<void>;
  random(): number;
}

export const defaultRetryPolicy: RetryPolicy = {
  baseDelayMs: 250,
  maxDelayMs: 4_000,
  maxRetryAfterMs: 10_000,
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      let stopListening: (() => void) | undefined;
      const timer = setTimeout(() => {
        stopListening?.();
        resolve();
      }, ms);
      if (signal) {
        stopListening = onAbort(signal, () => {
          clearTimeout(timer);
          resolve();
        });
      }
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
