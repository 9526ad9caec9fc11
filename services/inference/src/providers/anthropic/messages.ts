import { MessagesResponse, MessagesStreamEvent as StreamEvent, type MessagesRequest } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { failureContext, hideUpstreamModel, upstreamTransportError, type UpstreamFailureContext } from "../../upstream/errors";
import { postUpstream } from "../../upstream/json-call";
import { readSse } from "../../upstream/sse";
import type { MessagesResult, MessagesStreamEvent, ProviderContext, StreamFailure, UpstreamCall } from "../types";

/** The API version sent unless the provider's configured headers choose another one. */
export const DEFAULT_ANTHROPIC_VERSION = "2023-06-01";

/**
 * From this API version on, `temperature`, `top_p` and `top_k` are rejected with a 400 even at
 * their defaults (provider-wire-formats.md §4.1). Versions are dates, so later ones compare greater.
 */
const SAMPLING_REMOVED_IN = "2026-10-21";
const SAMPLING_PARAMS = ["temperature", "top_p", "top_k"] as const;

/** Anthropic's own Messages API: the request passes through with the upstream model name. */
export async function anthropicMessages(ctx: ProviderContext, call: UpstreamCall<MessagesRequest>): Promise<MessagesResult> {
  const names = failureContext(ctx, call);
  const stream = call.request.stream === true;
  const headers = anthropicHeaders(ctx, stream, call.anthropicBeta);
  const sent = await postUpstream(ctx.agent, {
    url: messagesUrl(ctx.config.base_url),
    headers,
    body: JSON.stringify(upstreamBody(call.request, call.upstreamModel, headers["anthropic-version"] ?? DEFAULT_ANTHROPIC_VERSION)),
    timeoutMs: ctx.config.timeout_ms,
    signal: call.signal,
    names,
    buffered: !stream,
  });
  if (!sent.ok) return sent;
  const response = sent.response;
  if (stream) return { ok: true, kind: "stream", events: relayEvents(response.body, names) };
  let text: string;
  try {
    text = await response.body.text();
  } catch (err) {
    return { ok: false, error: upstreamTransportError(err) };
  }
  const message = MessagesResponse.safeParse(parseJson(text));
  if (!message.success) {
    return { ok: false, error: new GatewayError("upstream_error", "The model provider sent a malformed answer") };
  }
  return { ok: true, kind: "json", message: { ...message.data, model: call.publicModel } };
}

/** `https://api.anthropic.com` and `https://api.anthropic.com/v1` (as some configs say) both work. */
export function messagesUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}/v1/messages`;
}

/**
 * Configured headers may choose the API version (or add `anthropic-beta`); their names are
 * lower-cased so `Anthropic-Version` replaces the default rather than being sent beside it. The
 * caller's beta features (as the SDK's `betas` option sends them) join the configured ones only
 * when the provider's `anthropic_beta` allow-list names them: a beta can turn on server-side tools
 * that fetch URLs or read files in the platform's account, so the rest are dropped. The credential
 * is set last: it always comes from the server, never from configured headers.
 */
export function anthropicHeaders(ctx: ProviderContext, stream: boolean, callerBeta?: string): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    "anthropic-version": DEFAULT_ANTHROPIC_VERSION,
  };
  for (const [name, value] of Object.entries(ctx.config.headers ?? {})) headers[name.toLowerCase()] = value;
  const allowed = ctx.config.anthropic_beta ?? [];
  const betas = new Set(splitList(headers["anthropic-beta"]));
  for (const beta of splitList(callerBeta)) if (allowed.includes(beta)) betas.add(beta);
  if (betas.size > 0) headers["anthropic-beta"] = [...betas].join(",");
  if (ctx.apiKey) headers["x-api-key"] = ctx.apiKey;
  return headers;
}

function splitList(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
}

/**
 * Under API version 2026-10-21 and later the sampling parameters are dropped rather than sent:
 * the upstream would refuse the whole request for them, while a model that samples by its own
 * defaults still answers what was asked. The caller's values are thus ignored, silently.
 */
function upstreamBody(request: MessagesRequest, upstreamModel: string, version: string): MessagesRequest {
  const body: MessagesRequest = { ...request, model: upstreamModel };
  if (/^\d{4}-\d{2}-\d{2}$/.test(version) && version >= SAMPLING_REMOVED_IN) {
    for (const param of SAMPLING_PARAMS) delete body[param];
  }
  return body;
}

/**
 * Re-emits each upstream event with the public model name in `message_start`. Unknown event types
 * and pings pass through (clients must ignore what they do not know); an `error` event, or an end
 * without `message_stop`, ends the stream with an error event.
 */
async function* relayEvents(body: AsyncIterable<Buffer>, names: UpstreamFailureContext): AsyncGenerator<MessagesStreamEvent> {
  try {
    for await (const sse of readSse(body)) {
      const data = parseJson(sse.data);
      if (typeof data !== "object" || data === null || Array.isArray(data)) continue; // not an event body
      // The SSE event name is what the SDK dispatches on; the data repeats it as `type`.
      const parsed = StreamEvent.safeParse("type" in data ? data : { ...data, type: sse.event });
      if (!parsed.success) continue;
      const event = parsed.data;
      if (event.type === "error" || sse.event === "error") {
        yield { type: "error", error: upstreamStreamError(event, names) };
        return;
      }
      yield { type: "event", event: event.type === "message_start" ? withPublicModel(event, names.publicModel) : event };
      if (event.type === "message_stop") return;
    }
  } catch (err) {
    if ((err as Error).name === "AbortError") return;
    // The upstream was reached; mid-stream, a transport failure is a silence too long or a cut.
    if (upstreamTransportError(err).code === "upstream_timeout") {
      yield { type: "error", error: { message: "The model provider stopped answering mid-stream", type: "timeout_error", code: "upstream_timeout" } };
      return;
    }
  }
  yield { type: "error", error: { message: "The model provider ended the stream early", type: "api_error", code: "upstream_error" } };
}

function withPublicModel(event: StreamEvent, publicModel: string): StreamEvent {
  const message = event.message;
  if (typeof message !== "object" || message === null) return event;
  return { ...event, message: { ...message, model: publicModel } };
}

/** `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, as a StreamFailure. */
function upstreamStreamError(event: StreamEvent, names: UpstreamFailureContext): StreamFailure {
  const inner = (event.error ?? {}) as { type?: unknown; message?: unknown };
  const message = typeof inner.message === "string" ? hideUpstreamModel(inner.message, names) : "The model provider failed mid-stream";
  return { message, type: typeof inner.type === "string" ? inner.type : "api_error", code: null };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
