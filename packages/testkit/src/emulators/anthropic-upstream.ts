import { countCacheBreakpoints, createAnthropicPromptCache, message, messageFrames, planMessage } from "./anthropic-messages";
import { isUnparsedBody, startEmulator } from "./http-emulator";
import type { EmulatorOptions, Exchange, ProviderSpec, UpstreamEmulator } from "./http-emulator";
import { isRecord, randomId } from "./synthetic";

export interface AnthropicUpstreamOptions extends EmulatorOptions {
  /** Path prefix the SDK's baseURL ends with (default ""; the SDK itself adds /v1/messages). */
  basePath?: string;
  /**
   * Smallest prefix, in tokens, that a cache_control breakpoint caches. Default: Anthropic's
   * per-model minimum (1024 for Sonnet, up to 4096); tests lower it to avoid sending thousands.
   */
  cacheMinTokens?: number;
}

/** Anthropic's limit on cache_control markers in one request. */
const MAX_CACHE_BREAKPOINTS = 4;

export const ANTHROPIC_VERSIONS = ["2023-06-01", "2026-10-21"] as const;

/** Error `type` for each status (provider-wire-formats.md §4.5). */
const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  409: "conflict_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

const DEFAULT_MESSAGES: Record<string, string> = {
  overloaded_error: "Overloaded",
  rate_limit_error: "Number of requests has exceeded your rate limit. Please try again later.",
  api_error: "Internal server error",
  not_found_error: "Not found",
};

export function anthropicErrorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
}

/** Sampling parameters that API version 2026-10-21 no longer accepts (400 even at defaults). */
const REMOVED_IN_2026 = ["temperature", "top_p", "top_k"];

/**
 * A fake Anthropic Messages API (`POST /v1/messages`) on node:http for `@anthropic-ai/sdk`:
 * both auth headers, both API versions, streaming with named events, tool use, prompt caching
 * (cache_control breakpoints; reset() empties the cache), scripted failures.
 */
export async function startAnthropicUpstream(opts: AnthropicUpstreamOptions = {}): Promise<UpstreamEmulator> {
  const basePath = (opts.basePath ?? "").replace(/\/$/, "");
  const promptCache = createAnthropicPromptCache({ minTokens: opts.cacheMinTokens });

  /** Every answer, error or not, carries the same id in the `request-id` header and error bodies. */
  function fail(ex: Exchange, status: number, msg: string, type = anthropicErrorType(status)): void {
    ex.json(status, errorBody(ex, type, msg));
  }

  function errorBody(ex: Exchange, type: string, msg: string) {
    return { type: "error", error: { type, message: msg }, request_id: ex.headers["request-id"] };
  }

  const spec: ProviderSpec = {
    basePath,
    commonHeaders: () => ({ "request-id": `req_011${randomId(21)}`, "anthropic-organization-id": "emulator-org" }),
    precheck(ex) {
      if (opts.apiKey !== undefined) {
        // The 1.x SDK sends the key as a Bearer token; when both headers are present, x-api-key wins.
        const headerKey = ex.req.headers["x-api-key"];
        const auth = ex.req.headers.authorization;
        const key = typeof headerKey === "string" ? headerKey : auth?.startsWith("Bearer ") ? auth.slice(7).trim() : undefined;
        if (key === undefined) {
          fail(ex, 401, "x-api-key header is required");
          return true;
        }
        if (key !== opts.apiKey) {
          fail(ex, 401, "invalid x-api-key");
          return true;
        }
      }
      const version = ex.req.headers["anthropic-version"];
      if (version === undefined) {
        fail(ex, 400, "anthropic-version: header is required");
        return true;
      }
      if (!(ANTHROPIC_VERSIONS as readonly string[]).includes(String(version))) {
        fail(ex, 400, `anthropic-version: ${JSON.stringify(String(version))} is not a valid version`);
        return true;
      }
      return false;
    },
    errorBody: (status, ex) => {
      const type = anthropicErrorType(status);
      return errorBody(ex, type, DEFAULT_MESSAGES[type] ?? `Request failed with status ${status}`);
    },
    handle,
  };

  function handle(ex: Exchange): Promise<void> | void {
    const { method, path } = ex.record;
    if (path !== `${basePath}/v1/messages`) return fail(ex, 404, "Not found");
    if (method !== "POST") return fail(ex, 405, `Method ${method} not allowed`);
    const body = ex.record.body;
    if (isUnparsedBody(body) || !isRecord(body)) return fail(ex, 400, "There was an error parsing the body of your request");
    for (const field of ["model", "max_tokens", "messages"]) {
      if (body[field] === undefined) return fail(ex, 400, `${field}: Field required`);
    }
    if (ex.req.headers["anthropic-version"] === "2026-10-21") {
      const removed = REMOVED_IN_2026.find((k) => k in body);
      if (removed) return fail(ex, 400, `${removed}: Extra inputs are not permitted`);
    }
    const breakpoints = countCacheBreakpoints(body);
    if (breakpoints > MAX_CACHE_BREAKPOINTS) {
      return fail(ex, 400, `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`);
    }
    const plan = planMessage(body, promptCache);
    const id = `msg_01${randomId(22)}`;
    if (body.stream === true) return ex.sse(200, messageFrames(plan, id));
    ex.json(200, message(plan, id));
  }

  const emulator = await startEmulator(spec, opts);
  return {
    ...emulator,
    reset() {
      emulator.reset();
      promptCache.clear();
    },
  };
}
