import {
  WebtoolCrawlResponse,
  WebtoolExtractResponse,
  WebtoolMapResponse,
  WebtoolResearchQueued,
  WebtoolResearchStatus,
  WebtoolSearchResponse,
  webtoolBounds,
  type WebtoolCrawlRequest,
  type WebtoolExtractRequest,
  type WebtoolMapRequest,
  type WebtoolResearchRequest,
  type WebtoolSearchRequest,
} from "@gw/contracts";
import type { Dispatcher } from "undici";
import type { z } from "zod";
import { credentialAware, type ToolUpstream } from "../tool-upstream";
import { callJson, malformed, type ToolOutcome } from "../upstream/call";
import { upstreamUrl, type CallSignal } from "@gw/service-kit";
import { defaultRetryPolicy, withRetries, type RetryPolicy } from "../upstream/retry";
import { boundResults, forwardedBody, withoutInternalFields } from "./answer";
import { WEBTOOL_LABEL, webtoolHttpError, type WebtoolOperation } from "./errors";

export interface WebtoolCallOptions {
  /** Cancels the upstream call (the caller went away, or the job is being stopped). */
  signal?: CallSignal;
}

/**
 * The web-tool provider (Tavily wire format, tavily-openapi.json) as the gateway uses it. Every
 * answer has the account fields removed (`usage`, `credits`) and `results` cut to the request's
 * bound; every failure is a `GatewayError` value in the gateway's terms (webtool/errors.ts).
 */
export interface WebtoolClient {
  search(request: WebtoolSearchRequest, options?: WebtoolCallOptions): Promise<ToolOutcome<WebtoolSearchResponse>>;
  extract(request: WebtoolExtractRequest, options?: WebtoolCallOptions): Promise<ToolOutcome<WebtoolExtractResponse>>;
  crawl(request: WebtoolCrawlRequest, options?: WebtoolCallOptions): Promise<ToolOutcome<WebtoolCrawlResponse>>;
  map(request: WebtoolMapRequest, options?: WebtoolCallOptions): Promise<ToolOutcome<WebtoolMapResponse>>;
  /**
   * `POST /research`: starts a task and answers `{request_id, created_at, status: "pending", input,
   * model, response_time}`. Never retried here: a repeated POST would start (and bill) a second task,
   * so the job worker decides.
   */
  startResearch(request: WebtoolResearchRequest, options?: WebtoolCallOptions): Promise<ToolOutcome<WebtoolResearchQueued>>;
  /**
   * `GET /research/{request_id}`: `pending`/`in_progress` (HTTP 202) while it runs, then `completed`
   * with `content` and `sources`, or `failed` (HTTP 200); another status passes through. An unknown
   * id is a 404 `not_found` error. Retried like the other reads.
   */
  getResearch(requestId: string, options?: WebtoolCallOptions): Promise<ToolOutcome<WebtoolResearchStatus>>;
}

/** Extra time over the provider's own time budget (the request's `timeout`) before we give up. */
const TIMEOUT_MARGIN_MS = 5_000;
/** Tavily's own time budget for crawl and map when the request sets none (seconds). */
const SITE_WALK_DEFAULT_TIMEOUT_S = 150;

export function createWebtoolClient(upstream: ToolUpstream, agent: Dispatcher, retry: RetryPolicy = defaultRetryPolicy): WebtoolClient {
  // Ours last: a configured extra header never replaces the credential.
  const readHeaders = { ...upstream.headers, accept: "application/json", authorization: `Bearer ${upstream.apiKey}` };
  const writeHeaders = { ...readHeaders, "content-type": "application/json" };

  async function call<S extends z.ZodType>(
    operation: WebtoolOperation,
    method: "GET" | "POST",
    path: string,
    body: unknown,
    schema: S,
    options: { timeoutMs: number; retries: number; signal?: CallSignal },
  ): Promise<ToolOutcome<z.infer<S>>> {
    return withRetries(options.retries, retry, options.signal, async () => {
      const answer = await callJson(agent, {
        method,
        url: upstreamUrl(upstream.baseUrl, path),
        headers: method === "GET" ? readHeaders : writeHeaders,
        body,
        timeoutMs: options.timeoutMs,
        signal: options.signal,
        label: WEBTOOL_LABEL,
        httpError: (status, h, text) => credentialAware(upstream, status, webtoolHttpError(operation, status, h, text)),
      });
      if (!answer.ok) return answer;
      const parsed = schema.safeParse(answer.value.body);
      if (!parsed.success) return { ok: false, error: malformed(WEBTOOL_LABEL) };
      return { ok: true, value: withoutInternalFields(parsed.data as Record<string, unknown>) as z.infer<S> };
    });
  }

  /** A provider-side `timeout` (seconds) needs that long plus a margin; never less than the config's. */
  const budget = (timeout: number | null | undefined, fallbackSeconds?: number) => {
    const seconds = timeout ?? fallbackSeconds;
    return seconds === undefined ? upstream.timeoutMs : Math.max(upstream.timeoutMs, seconds * 1000 + TIMEOUT_MARGIN_MS);
  };
  const reads = upstream.maxRetries;

  return {
    async search(request, options = {}) {
      const out = await call("search", "POST", "/search", forwardedBody(request), WebtoolSearchResponse, {
        timeoutMs: upstream.timeoutMs,
        retries: reads,
        signal: options.signal,
      });
      return out.ok ? { ok: true, value: boundResults(out.value, request.max_results ?? webtoolBounds.searchDefaultMaxResults) } : out;
    },
    extract(request, options = {}) {
      return call("extract", "POST", "/extract", forwardedBody(request), WebtoolExtractResponse, {
        timeoutMs: budget(request.timeout),
        retries: reads,
        signal: options.signal,
      });
    },
    async crawl(request, options = {}) {
      const out = await call("crawl", "POST", "/crawl", forwardedBody(request), WebtoolCrawlResponse, {
        timeoutMs: budget(request.timeout, SITE_WALK_DEFAULT_TIMEOUT_S),
        retries: reads,
        signal: options.signal,
      });
      return out.ok ? { ok: true, value: boundResults(out.value, request.limit ?? webtoolBounds.defaultLimit) } : out;
    },
    async map(request, options = {}) {
      const out = await call("map", "POST", "/map", forwardedBody(request), WebtoolMapResponse, {
        timeoutMs: budget(request.timeout, SITE_WALK_DEFAULT_TIMEOUT_S),
        retries: reads,
        signal: options.signal,
      });
      return out.ok ? { ok: true, value: boundResults(out.value, request.limit ?? webtoolBounds.defaultLimit) } : out;
    },
    startResearch(request, options = {}) {
      return call("research", "POST", "/research", forwardedBody(request), WebtoolResearchQueued, {
        timeoutMs: upstream.timeoutMs,
        retries: 0,
        signal: options.signal,
      });
    },
    getResearch(requestId, options = {}) {
      return call("research-read", "GET", `/research/${encodeURIComponent(requestId)}`, undefined, WebtoolResearchStatus, {
        timeoutMs: upstream.timeoutMs,
        retries: reads,
        signal: options.signal,
      });
    },
  };
}
