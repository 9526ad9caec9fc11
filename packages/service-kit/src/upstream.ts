import type { IncomingHttpHeaders } from "node:http";
import type { GatewayError } from "@gw/errors";
import { traceHeaders, tracingEnabled } from "@gw/telemetry";
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
export function sendUpstream(agent: Dispatcher, given: UpstreamRequest): Promise<UpstreamResponse> {
  // The attempt's trace context goes upstream as W3C headers, for a provider (or a proxy) that traces.
  const req = tracingEnabled() ? { ...given, headers: { ...given.headers, ...traceHeaders() } } : given;
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
 * for an answer that is read whole anyway that is work for nothing, and garbage that reaches the old
 * generation (figures in bench/README.md).
 *
 * An error status is what matters of an error answer, so as `readBounded` does on a stream, only
 * its first `errorPageBytes` are kept (the rest is not waited for), and a body that fails or stalls
 * after the status still resolves, with what came.
 */
function sendBuffered(agent: Dispatcher, req: UpstreamRequest): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    const url = new URL(req.url);
    const signal = req.signal;
    let statusCode = 0;
    let headers: IncomingHttpHeaders = {};
    let parts: Buffer[] = [];
    let size = 0;
    const answerLimit = req.maxAnswerBytes ?? bufferedAnswerLimitBytes;
    let limit = answerLimit;
    let stopListening: (() => void) | undefined;
    let settled = false;
    // Only a final answer has a body, so a status of 300 or more is an error answer.
    const errorPage = () => statusCode >= 300;
    const settle = () => {
      if (settled) return;
      settled = true;
      stopListening?.();
      resolve({ statusCode, headers, body: new BufferedBody(parts.length === 1 ? parts[0]! : Buffer.concat(parts)) });
    };
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
          stopListening?.(); // a request sent again (pipelining) must not keep the first listener
          if (signal) stopListening = onAbort(signal, () => controller.abort(abortReason(signal)));
        },
        onResponseStart(_controller, status, responseHeaders) {
          statusCode = status;
          headers = responseHeaders;
          limit = errorPage() ? errorPageBytes : answerLimit; // again after a 1xx
        },
        onResponseData(controller, chunk) {
          if (size + chunk.length <= limit) {
            size += chunk.length;
            parts.push(chunk);
            return;
          }
          if (errorPage()) {
            parts.push(chunk.subarray(0, limit - size));
            settle();
            controller.abort(new errors.RequestAbortedError("The rest of the error page is not needed"));
            return;
          }
          parts = [];
          controller.abort(new errors.ResponseExceededMaxSizeError(`The answer is over ${limit} bytes`));
        },
        onResponseEnd() {
          settle();
        },
        onResponseError(_controller, err) {
          if (errorPage()) return settle();
          settled = true;
          stopListening?.();
          reject(err);
        },
      },
    );
  });
}

/** The reason the call rejects with, as `request()` gives it: the signal's own, else undici's. */
function abortReason(signal: CallSignal): Error {
  return (signal.reason as Error | undefined) ?? new errors.RequestAbortedError();
}

/** A body read whole: the same reading methods as undici's, over one Buffer. */
export class BufferedBody implements UpstreamBody {
  constructor(private readonly bytes: Buffer) {}

  async json(): Promise<unknown> {
    return JSON.parse(this.utf8());
  }

  async text(): Promise<string> {
    return this.utf8();
  }

  /** As undici's body does, a leading UTF-8 byte order mark is not part of the text. */
  private utf8(): string {
    const b = this.bytes;
    const bom = b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
    return b.toString("utf8", bom);
  }

  destroy(): void {}

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    if (this.bytes.length > 0) yield this.bytes;
  }
}

/** What is kept of an error answer's body. */
export const errorPageBytes = 64 * 1024;

/** Reads at most `limit` bytes of an error body; a huge or endless error page is not our problem. */
export async function readBounded(body: UpstreamBody, limit = errorPageBytes): Promise<string> {
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
