import { GatewayError } from "@gw/errors";

export interface UpstreamFailureContext {
  /** The upstream model name, replaced by the public one in any message shown to the caller. */
  upstreamModel: string;
  publicModel: string;
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
    return new GatewayError("upstream_error", "The model provider refused the gateway's credentials", { status: 502 });
  }
  if (status === 402) {
    // Our account with the provider is out of credit (Anthropic's billing_error, OpenRouter's 402):
    // the caller has nothing to pay, and another route may work.
    return new GatewayError("upstream_error", "The model provider refused the gateway's account (billing)", { status: 502 });
  }
  if (status === 408 || status === 504) return new GatewayError("upstream_timeout", "The model provider timed out");
  if (status === 503 || status === 529) return new GatewayError("upstream_unavailable", "The model provider is overloaded or unavailable");
  if (status >= 500) return new GatewayError("upstream_error", "The model provider failed to answer");
  return new GatewayError("invalid_request", message, { status: status >= 400 && status < 500 ? status : 400, retryable: false });
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

export function hideUpstreamModel(text: string, ctx: UpstreamFailureContext): string {
  return ctx.upstreamModel && ctx.upstreamModel !== ctx.publicModel ? text.split(ctx.upstreamModel).join(ctx.publicModel) : text;
}
