import { errorCodes, type ErrorCode } from "@gw/errors";
import { headerRef, rateLimitHeaderRefs } from "./headers";
import { ref, type JsonSchema } from "./json-schema";

export type Envelope = "openai" | "anthropic";

/** What each error code means to a caller; codes that only services see among themselves are left out. */
const meanings: Partial<Record<ErrorCode, string>> = {
  invalid_request: "the body, a parameter or a header is invalid; `param` names it",
  missing_api_key: "no key was sent",
  invalid_api_key: "the key is unknown or revoked",
  key_disabled: "the key is disabled",
  subscription_inactive: "the workspace's subscription is not active",
  model_not_allowed: "the key may not call this model",
  tool_not_allowed: "the key may not call this tool",
  not_found: "no such job, file or batch (or not one this key may see)",
  model_not_found: "no such model",
  conflict: "the Idempotency-Key was already used with a different request, or the batch has already finished",
  body_too_large: "the body is larger than the route takes",
  unsupported_media_type: "the body's content type is not the one the route takes",
  provider_credential_refused: "the provider refused the workspace's own credential",
  provider_credential_unavailable: "the workspace's own credential cannot be opened",
  rate_limit_exceeded: "a rate limit of the key or workspace is reached (`type` is `requests` or `tokens`)",
  upstream_rate_limited: "the provider is rate-limiting the gateway",
  too_many_auth_failures: "this address failed to authenticate too often",
  internal_error: "an unexpected failure in the gateway",
  upstream_error: "the provider failed or answered something malformed",
  upstream_unavailable: "no provider could take the call (or the rate limiter is unavailable)",
  server_busy: "the gateway is holding as many request bodies as it may",
  provider_not_configured: "no provider is configured for this call",
  upstream_timeout: "the provider did not answer in time",
};

export const errorStatuses = [...new Set(Object.values(errorCodes).map((row) => row.status))].sort((a, b) => a - b);

/** The response component for an error status in an envelope, e.g. `OpenAIError429`. */
export function errorResponseName(envelope: Envelope, status: number): string {
  return `${envelope === "openai" ? "OpenAI" : "Anthropic"}Error${status}`;
}

/**
 * One response per status and envelope. Its description lists the codes (OpenAI's `error.code`)
 * that give that status, with the `type` each envelope carries, from the one table of codes, so the
 * reference cannot drift from what the gateway sends.
 */
export function errorResponses(): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const envelope of ["openai", "anthropic"] as const) {
    for (const status of errorStatuses) {
      const codes = (Object.keys(errorCodes) as ErrorCode[]).filter((code) => errorCodes[code].status === status && meanings[code]);
      if (codes.length === 0) continue;
      const lines = codes.map((code) => `- \`${code}\` (type \`${errorCodes[code][envelope]}\`): ${meanings[code]}`);
      const headers: JsonSchema = { "x-request-id": headerRef("RequestId") };
      if (status === 429 || status === 503) Object.assign(headers, { "retry-after": headerRef("RetryAfter"), "retry-after-ms": headerRef("RetryAfterMs") });
      // A refusal by the gateway's own limits also says where the caller stands.
      if (status === 429) Object.assign(headers, { "x-should-retry": headerRef("ShouldRetry"), ...rateLimitHeaderRefs() });
      const first = codes[0]!;
      out[errorResponseName(envelope, status)] = {
        description: `${envelope === "openai" ? "Error" : "Error, in Anthropic's envelope"}. ${envelope === "openai" ? "`error.code`" : "Code"}:\n${lines.join("\n")}`,
        headers,
        content: { "application/json": { schema: ref(envelope === "openai" ? "OpenAIError" : "AnthropicError"), example: example(envelope, first) } },
      };
    }
  }
  return out;
}

function example(envelope: Envelope, code: ErrorCode): unknown {
  const message = meanings[code]!.replace(/^./, (ch) => ch.toUpperCase());
  if (envelope === "anthropic") return { type: "error", error: { type: errorCodes[code].anthropic, message }, request_id: "req_0123456789abcdef" };
  return { error: { message, type: errorCodes[code].openai, param: null, code } };
}
