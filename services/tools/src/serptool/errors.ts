import { GatewayError } from "@gw/errors";
import { retryHeaders, type UpstreamHeaders } from "../upstream/call";

export const SERPTOOL_LABEL = "The search-engine provider";

/** SerpAPI's throughput limit is per hour: without retry-after, the caller is told a minute. */
const DEFAULT_RETRY_AFTER_S = 60;

/**
 * SerpAPI's failures (`{"error": "..."}`, provider-wire-formats.md §2.3) in the gateway's terms:
 * - 429 "Your account has run out of searches." is the gateway's monthly quota, like Tavily's 432:
 *   429 `type: "insufficient_quota"`, `x-should-retry: false`, not retryable;
 * - any other 429 (the hourly throughput limit): 429 with retry-after (60 s if it gave none);
 * - 401 (invalid key) and 403 (account deleted): the provider refused our account: 502;
 * - 408 and 504: 504; any other 5xx (500, 503 "couldn't get valid results"): 502 (retryable);
 * - any other 4xx (400 "Missing query `q` parameter."): the caller's, with its status and message.
 */
export function serptoolHttpError(status: number, headers: UpstreamHeaders, bodyText: string): GatewayError {
  const message = serpApiMessage(bodyText);
  if (status === 429) {
    if (message && /run out of searches|quota/i.test(message) && !/throughput|hour/i.test(message)) {
      return new GatewayError("upstream_rate_limited", `${SERPTOOL_LABEL}'s search quota for this gateway is exhausted; contact the gateway's operator`, {
        type: "insufficient_quota",
        headers: { "x-should-retry": "false" },
        retryable: false,
      });
    }
    return new GatewayError("upstream_rate_limited", `${SERPTOOL_LABEL} is rate limiting requests${message ? `: ${message}` : ""}`, {
      headers: retryHeaders(headers, DEFAULT_RETRY_AFTER_S),
    });
  }
  if (status === 401 || status === 403) {
    return new GatewayError("upstream_error", `${SERPTOOL_LABEL} refused the gateway's credentials`, { retryable: false });
  }
  if (status === 408 || status === 504) return new GatewayError("upstream_timeout", `${SERPTOOL_LABEL} timed out`);
  if (status >= 500) return new GatewayError("upstream_error", `${SERPTOOL_LABEL} failed to answer (${status})`);
  return new GatewayError("invalid_request", message ?? `${SERPTOOL_LABEL} refused the request (${status})`, {
    status: status >= 400 && status < 500 ? status : 400,
    retryable: false,
  });
}

export function serpApiMessage(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === "string") return body.error;
  } catch {
    // not JSON
  }
  return undefined;
}
