import { GatewayError } from "@gw/errors";
import type { Dispatcher } from "undici";
import type { z } from "zod";
import { upstreamHttpError, upstreamTransportError, type UpstreamFailureContext } from "./errors";
import { readBounded, sendUpstream, upstreamUrl, type CallSignal, type UpstreamResponse } from "@gw/service-kit";

export interface JsonPost {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  timeoutMs: number;
  signal: CallSignal;
  names: UpstreamFailureContext;
  /** The answer is one JSON document, read whole before `postUpstream` resolves (never a stream). */
  buffered?: boolean;
  /**
   * Rewrites a provider's error body into one `upstreamHttpError` reads (`{message}` or
   * `{error:{message}}`), for providers with their own envelope (Jina's `{detail}`).
   */
  errorBody?: (text: string) => string;
}

export type JsonOutcome<T> = { ok: true; value: T } | { ok: false; error: GatewayError };

export type SentUpstream = { ok: true; response: UpstreamResponse } | { ok: false; error: GatewayError };

/**
 * One POST, resolved as soon as the upstream's headers are in (with `buffered`, once its body is in
 * too). No answer is `upstreamTransportError`; anything but a 200 is read (bounded) into
 * `upstreamHttpError`. The body of a 200 is the caller's.
 */
export async function postUpstream(agent: Dispatcher, req: Omit<JsonPost, "body"> & { body: string | Buffer }): Promise<SentUpstream> {
  let response: UpstreamResponse;
  try {
    response = await sendUpstream(agent, {
      url: req.url,
      method: "POST",
      headers: req.headers,
      body: req.body,
      timeoutMs: req.timeoutMs,
      signal: req.signal,
      buffered: req.buffered,
    });
  } catch (err) {
    return { ok: false, error: upstreamTransportError(err) };
  }
  if (response.statusCode !== 200) {
    const text = await readBounded(response.body).catch(() => "");
    return { ok: false, error: upstreamHttpError(response.statusCode, response.headers, req.errorBody ? req.errorBody(text) : text, req.names) };
  }
  return { ok: true, response };
}

/**
 * One non-streaming JSON call: POST, then the answer validated against `schema`. Every failure is a
 * value: HTTP errors through `upstreamHttpError`, no answer through `upstreamTransportError`, and an
 * answer we cannot read is a retryable 502 (another route may do better).
 */
export async function postJson<S extends z.ZodType>(agent: Dispatcher, req: JsonPost, schema: S): Promise<JsonOutcome<z.infer<S>>> {
  const sent = await postUpstream(agent, { ...req, body: JSON.stringify(req.body), buffered: true });
  if (!sent.ok) return sent;
  let json: unknown;
  try {
    json = await sent.response.body.json();
  } catch (err) {
    if (err instanceof SyntaxError) return { ok: false, error: malformed() };
    return { ok: false, error: upstreamTransportError(err) };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) return { ok: false, error: malformed() };
  return { ok: true, value: parsed.data };
}

export function malformed(): GatewayError {
  return new GatewayError("upstream_error", "The model provider sent a malformed answer");
}

export { upstreamUrl };

/** JSON headers with the server's credential as a Bearer token (never the caller's). */
export function bearerJsonHeaders(apiKey: string | undefined, extra: Record<string, string> | undefined): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json", ...extra };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  return headers;
}
