import { GatewayError } from "@gw/errors";
import type { Dispatcher } from "undici";
import { readBounded, sendUpstream, type CallSignal, type UpstreamResponse } from "@gw/service-kit";

/** Expected failures are values, as everywhere below the HTTP layer; only the routes throw. */
export type ToolOutcome<T> = { ok: true; value: T } | { ok: false; error: GatewayError };

export type UpstreamHeaders = Record<string, string | string[] | undefined>;

export interface JsonCall {
  method: "GET" | "POST";
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  timeoutMs: number;
  signal?: CallSignal;
  /** Who answers, for messages: "The web tool provider". */
  label: string;
  /** The provider's non-2xx answer as the gateway's error (each provider has its own codes). */
  httpError(status: number, headers: UpstreamHeaders, bodyText: string): GatewayError;
}

/** A 2xx answer: its status (Tavily's research poll says 202 or 200) and parsed JSON. */
export interface JsonAnswer {
  status: number;
  body: unknown;
}

/**
 * One JSON request. No answer is `transportError` (a time-out is a 504); a non-2xx answer is read
 * (bounded) into the provider's `httpError`; a 2xx whose body is not JSON is a 502.
 */
export async function callJson(agent: Dispatcher, call: JsonCall): Promise<ToolOutcome<JsonAnswer>> {
  let response: UpstreamResponse;
  try {
    response = await sendUpstream(agent, {
      url: call.url,
      method: call.method,
      headers: call.headers,
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
      timeoutMs: call.timeoutMs,
      signal: call.signal,
      buffered: true,
    });
  } catch (err) {
    return { ok: false, error: transportError(err, call.label) };
  }
  if (response.statusCode < 200 || response.statusCode > 299) {
    const text = await readBounded(response.body).catch(() => "");
    return { ok: false, error: call.httpError(response.statusCode, response.headers, text) };
  }
  try {
    return { ok: true, value: { status: response.statusCode, body: await response.body.json() } };
  } catch (err) {
    if (err instanceof SyntaxError) return { ok: false, error: malformed(call.label) };
    return { ok: false, error: transportError(err, call.label) };
  }
}

/** No HTTP answer: a time-out (headers or body) is 504, anything else (refused, reset) 502; both retryable. */
export function transportError(err: unknown, label: string): GatewayError {
  const code = (err as { code?: string }).code ?? "";
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT") {
    return new GatewayError("upstream_timeout", `${label} did not answer in time`, { cause: err });
  }
  return new GatewayError("upstream_error", `Could not reach ${lower(label)}`, { cause: err });
}

export function malformed(label: string): GatewayError {
  return new GatewayError("upstream_error", `${label} sent a malformed answer`);
}

/** The upstream's retry-after headers, kept on a 429 so the caller's client can honour them. */
export function retryHeaders(headers: UpstreamHeaders, fallbackSeconds: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["retry-after", "retry-after-ms"]) {
    const value = headers[name];
    if (typeof value === "string" && value !== "") out[name] = value;
  }
  if (out["retry-after"] === undefined) out["retry-after"] = String(fallbackSeconds);
  return out;
}

export function lower(label: string): string {
  return label.charAt(0).toLowerCase() + label.slice(1);
}
