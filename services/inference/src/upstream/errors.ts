import { GatewayError } from "@gw/errors";

export interface UpstreamFailureContext {
  /** The upstream model name, replaced by the public one in any message shown to the caller. */
  upstreamModel: string;
  publicModel: string;
  /**
   * The credential the call was sent with. A provider may quote it in an error ("Incorrect API key
   * provided: sk-…"); it is masked in any text passed on to the caller.
   */
  credential?: string;
}

/** The failure context of one upstream call: its model names and the credential it carries. */
export function failureContext(ctx: { apiKey: string | undefined }, call: { upstreamModel: string; publicModel: string }): UpstreamFailureContext {
  return { upstreamModel: call.upstreamModel, publicModel: call.publicModel, credential: ctx.apiKey };
}

/**
 * An upstream's HTTP failure, as a value: the caller's request problems keep their 4xx; a 429
 * stays a 429 with its retry-after; the upstream's own failures become 502/503/504. Messages never
 * name the upstream model.
 */
export function upstreamHttpError(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  bodyText: string,
  ctx: UpstreamFailureContext,
): GatewayError {
  const message = hideUpstreamModel(extractMessage(bodyText) ?? `upstream answered ${status}`, ctx);
  if (status === 429) {
    const retry: Record<string, string> = {};
    for (const name of ["retry-after", "retry-after-ms"]) {
      const value = headers[name];
      if (typeof value === "string") retry[name] = value;
    }
    return new GatewayError("upstream_rate_limited", `The model is rate limited upstream: ${message}`, { headers: retry });
  }
  if (status === 401 || status === 403) {
    // Our credential was refused: not the caller's fault, and another route may work.
    return refusal(new GatewayError("upstream_error", "The model provider refused the gateway's credentials", { status: 502 }), status);
  }
  if (status === 402) {
    // Our account with the provider is out of credit (Anthropic's billing_error, OpenRouter's 402):
    // the caller has nothing to pay, and another route may work.
    return refusal(new GatewayError("upstream_error", "The model provider refused the gateway's account (billing)", { status: 502 }), status);
  }
  if (status === 408 || status === 504) return new GatewayError("upstream_timeout", "The model provider timed out");
  if (status === 503 || status === 529) return new GatewayError("upstream_unavailable", "The model provider is overloaded or unavailable");
  if (status >= 500) return new GatewayError("upstream_error", "The model provider failed to answer");
  return new GatewayError("invalid_request", message, { status: status >= 400 && status < 500 ? status : 400, retryable: false });
}

/**
 * The upstream statuses of failures that refused the credential sent (401, 403) or its account (402),
 * so the fallback loop can tell whose credential it was: the gateway's is the platform's problem (502,
 * another route may work); a workspace's own is that workspace's alone (ownCredentialRefused).
 */
const refusals = new WeakMap<GatewayError, number>();

function refusal(error: GatewayError, status: number): GatewayError {
  refusals.set(error, status);
  return error;
}

/** The upstream status when `error` is a refusal of the credential sent; undefined otherwise. */
export function credentialRefusalStatus(error: GatewayError): number | undefined {
  return refusals.get(error);
}

/**
 * The provider refused the workspace's own credential: a 424 naming the provider (by the name the
 * workspace registered it under), not retryable, and not the 401 an SDK would take for its gateway
 * key being wrong. Only the workspace can fix it, so neither a retry nor another route is tried.
 */
export function ownCredentialRefused(provider: string, upstreamStatus: number): GatewayError {
  const what = upstreamStatus === 402 ? "refused the account of this workspace's own credential (billing)" : "refused this workspace's own credential";
  return new GatewayError(
    "provider_credential_refused",
    `The provider \`${provider}\` ${what} (HTTP ${upstreamStatus}); the request was not retried or sent to another provider. Update the credential this workspace registered for \`${provider}\`.`,
  );
}

/** The workspace's own credential was refused on its recent calls: not tried again until its breaker lets one through. */
export function ownCredentialSuspended(provider: string, waitMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new GatewayError(
    "provider_credential_refused",
    `The provider \`${provider}\` refused this workspace's own credential on its recent calls; it is not tried again for ${seconds}s. Update the credential this workspace registered for \`${provider}\`.`,
  );
}

/** A transport failure (no HTTP answer): timeouts are 504, everything else 502; both retryable. */
export function upstreamTransportError(err: unknown): GatewayError {
  const code = (err as { code?: string }).code ?? "";
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT") {
    return new GatewayError("upstream_timeout", "The model provider did not answer in time", { cause: err });
  }
  return new GatewayError("upstream_error", "Could not reach the model provider", { cause: err });
}

function extractMessage(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof body.error === "string") return body.error;
    if (typeof body.error?.message === "string") return body.error.message;
    if (typeof body.message === "string") return body.message;
  } catch {
    // not JSON: say nothing of it rather than echo an HTML error page
  }
  return undefined;
}

/** What of an upstream's text a caller may see: the public model's name, and never our credential. */
export function hideUpstreamModel(text: string, ctx: UpstreamFailureContext): string {
  let shown = ctx.upstreamModel && ctx.upstreamModel !== ctx.publicModel ? text.split(ctx.upstreamModel).join(ctx.publicModel) : text;
  // Short values (a test's "k") would mask ordinary words; real credentials are long.
  if (ctx.credential && ctx.credential.length >= 8 && shown.includes(ctx.credential)) shown = shown.split(ctx.credential).join("[redacted]");
  return shown;
}
