import { GatewayError } from "@gw/errors";
import { retryHeaders, type UpstreamHeaders } from "../upstream/call";

export const WEBTOOL_LABEL = "The web tool provider";

/** When Tavily sends a 429 without retry-after, the caller is told to wait this long (seconds). */
const DEFAULT_RETRY_AFTER_S = 5;

/** What the caller's operation was, where Tavily's status means different things per route. */
export type WebtoolOperation = "search" | "extract" | "crawl" | "map" | "research" | "research-read";

/**
 * Tavily's failures (`{"detail":{"error"}}`, tavily-openapi.json) in the gateway's terms:
 * - 429 (rate limit): 429 `upstream_rate_limited` with the upstream's retry-after (5 s if it gave none);
 * - 432 (key or plan limit) and 433 (pay-as-you-go limit) are the gateway's account running out,
 *   which the caller can neither fix nor outwait quickly: 429 with `type: "insufficient_quota"` (what
 *   OpenAI answers when an account's quota is spent) and `x-should-retry: false`, not retryable;
 * - 401, and 403 on search/extract/research: the provider refused our credential: 502;
 * - 403 on crawl/map is Tavily's "URL is not supported": the caller's request, 400 naming `url`;
 * - 404 on a research read: 404 `not_found`;
 * - 408 and 504: 504; any other 5xx: 502 (retryable);
 * - any other 4xx: the caller's request, passed on with its status and Tavily's message.
 */
export function webtoolHttpError(operation: WebtoolOperation, status: number, headers: UpstreamHeaders, bodyText: string): GatewayError {
  const detail = tavilyMessage(bodyText);
  switch (status) {
    case 429:
      return new GatewayError("upstream_rate_limited", `${WEBTOOL_LABEL} is rate limiting requests${detail ? `: ${detail}` : ""}`, {
        headers: retryHeaders(headers, DEFAULT_RETRY_AFTER_S),
      });
    case 432:
    case 433:
      return new GatewayError(
        "upstream_rate_limited",
        `${WEBTOOL_LABEL}'s ${status === 432 ? "plan" : "pay-as-you-go"} usage limit for this gateway is exhausted; contact the gateway's operator`,
        { type: "insufficient_quota", headers: { "x-should-retry": "false" }, retryable: false },
      );
    case 401:
      return refused();
    case 403:
      if (operation === "crawl" || operation === "map") {
        return new GatewayError("invalid_request", `The URL is not supported${detail ? `: ${detail}` : ""}`, { param: "url" });
      }
      return refused();
    case 404:
      if (operation === "research-read") return new GatewayError("not_found", "Research task not found");
      break;
    case 408:
    case 504:
      return new GatewayError("upstream_timeout", `${WEBTOOL_LABEL} timed out`);
  }
  if (status >= 500) return new GatewayError("upstream_error", `${WEBTOOL_LABEL} failed to answer (${status})`);
  return new GatewayError("invalid_request", detail ?? `${WEBTOOL_LABEL} refused the request (${status})`, {
    status: status >= 400 && status < 500 ? status : 400,
    retryable: false,
  });
}

function refused(): GatewayError {
  // Our credential: not the caller's fault, and the operator must act (so not worth retrying).
  return new GatewayError("upstream_error", `${WEBTOOL_LABEL} refused the gateway's credentials`, { retryable: false });
}

/** Tavily's `detail.error` (or `detail` as text, or a keyless-style `error.message`); undefined if none. */
export function tavilyMessage(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { detail?: unknown; error?: unknown; message?: unknown };
    const detail = body.detail;
    if (typeof detail === "string") return detail;
    if (detail && typeof detail === "object" && typeof (detail as { error?: unknown }).error === "string") return (detail as { error: string }).error;
    if (typeof body.error === "string") return body.error;
    if (body.error && typeof body.error === "object" && typeof (body.error as { message?: unknown }).message === "string") {
      return (body.error as { message: string }).message;
    }
    if (typeof body.message === "string") return body.message;
  } catch {
    // not JSON: say nothing of it rather than echo an HTML error page
  }
  return undefined;
}
