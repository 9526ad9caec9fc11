/**
 * The one table that maps an error code to its HTTP status and to the error `type` each envelope
 * carries. Handlers throw or return a GatewayError with a code; only the edge turns it into a body.
 */
export const errorCodes = {
  invalid_request: { status: 400, openai: "invalid_request_error", anthropic: "invalid_request_error" },
  missing_api_key: { status: 401, openai: "invalid_request_error", anthropic: "authentication_error" },
  invalid_api_key: { status: 401, openai: "invalid_request_error", anthropic: "authentication_error" },
  unauthenticated_internal: { status: 401, openai: "invalid_request_error", anthropic: "authentication_error" },
  /** The console: no session (signed out, expired), or a sign-in with a wrong email or password. */
  not_signed_in: { status: 401, openai: "invalid_request_error", anthropic: "authentication_error" },
  invalid_credentials: { status: 401, openai: "invalid_request_error", anthropic: "authentication_error" },
  /** The console: a state-changing call without the session's CSRF token (or from another origin). */
  csrf_failed: { status: 403, openai: "permission_error", anthropic: "permission_error" },
  key_disabled: { status: 403, openai: "permission_error", anthropic: "permission_error" },
  subscription_inactive: { status: 403, openai: "permission_error", anthropic: "permission_error" },
  model_not_allowed: { status: 403, openai: "permission_error", anthropic: "permission_error" },
  tool_not_allowed: { status: 403, openai: "permission_error", anthropic: "permission_error" },
  /** The caller is known but may not act on this resource (another workspace's usage, say). */
  forbidden: { status: 403, openai: "permission_error", anthropic: "permission_error" },
  not_found: { status: 404, openai: "invalid_request_error", anthropic: "not_found_error" },
  model_not_found: { status: 404, openai: "invalid_request_error", anthropic: "not_found_error" },
  method_not_allowed: { status: 405, openai: "invalid_request_error", anthropic: "invalid_request_error" },
  conflict: { status: 409, openai: "invalid_request_error", anthropic: "conflict_error" },
  body_too_large: { status: 413, openai: "invalid_request_error", anthropic: "request_too_large" },
  unsupported_media_type: { status: 415, openai: "invalid_request_error", anthropic: "invalid_request_error" },
  /**
   * The provider refused the workspace's own credential (registered through the admin API). Not 401,
   * which SDKs read as their gateway key being wrong; not retryable: only the workspace can fix it.
   */
  provider_credential_refused: { status: 424, openai: "invalid_request_error", anthropic: "invalid_request_error" },
  /** A workspace has its own credential for the provider but the gateway cannot open it (its master key changed). */
  provider_credential_unavailable: { status: 424, openai: "invalid_request_error", anthropic: "invalid_request_error" },
  rate_limit_exceeded: { status: 429, openai: "requests", anthropic: "rate_limit_error" },
  /**
   * A hard monthly budget of the workspace or the key has no room for the request's worst-case cost.
   * OpenAI's own name for a spent quota; not retryable until the month (or the budget) changes.
   */
  insufficient_quota: { status: 429, openai: "insufficient_quota", anthropic: "insufficient_quota" },
  upstream_rate_limited: { status: 429, openai: "rate_limit_error", anthropic: "rate_limit_error" },
  /** A client address that failed to authenticate too often is refused for the rest of its window. */
  too_many_auth_failures: { status: 429, openai: "rate_limit_error", anthropic: "rate_limit_error" },
  internal_error: { status: 500, openai: "server_error", anthropic: "api_error" },
  upstream_error: { status: 502, openai: "server_error", anthropic: "api_error" },
  upstream_unavailable: { status: 503, openai: "server_error", anthropic: "overloaded_error" },
  /** This process is at its bound on request bodies held at once: a retryable 503, never a crash. */
  server_busy: { status: 503, openai: "server_error", anthropic: "overloaded_error" },
  provider_not_configured: { status: 503, openai: "server_error", anthropic: "api_error" },
  upstream_timeout: { status: 504, openai: "server_error", anthropic: "timeout_error" },
} as const satisfies Record<string, { status: number; openai: string; anthropic: string }>;

export type ErrorCode = keyof typeof errorCodes;
