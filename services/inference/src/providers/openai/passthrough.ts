import { GatewayError } from "@gw/errors";
import type { UpstreamResponse } from "@gw/service-kit";
import { failureContext, hideUpstreamModel, upstreamTransportError, type UpstreamFailureContext } from "../../upstream/errors";
import { postUpstream, upstreamUrl, type SentUpstream } from "../../upstream/json-call";
import { readSse } from "../../upstream/sse";
import type { ProviderContext, RelayedStreamEvent, UpstreamCall } from "../types";

/**
 * Shared by the OpenAI pass-through operations (completions, images, audio): one POST with the
 * server's credential, failures as values, and an SSE relay for streams the gateway does not reshape.
 */

/**
 * A POST to `${base_url}${path}` with the server's credential; see `postUpstream`. `buffered` when
 * the answer is one JSON document (the caller asked for no stream).
 */
export function postOpenAI(
  ctx: ProviderContext,
  call: UpstreamCall<unknown>,
  path: string,
  body: string | Buffer,
  headers: Record<string, string>,
  buffered = false,
): Promise<SentUpstream> {
  return postUpstream(ctx.agent, {
    url: upstreamUrl(ctx.config.base_url, path),
    headers,
    body,
    timeoutMs: ctx.config.timeout_ms,
    signal: call.signal,
    names: failureContext(ctx, call),
    buffered,
  });
}

export function contentTypeOf(response: UpstreamResponse): string | undefined {
  const value = response.headers["content-type"];
  return Array.isArray(value) ? value[0] : value;
}

export function isEventStream(response: UpstreamResponse): boolean {
  return contentTypeOf(response)?.toLowerCase().startsWith("text/event-stream") ?? false;
}

/** The whole JSON body, checked by `parse`; a body that is not what the spec promises is a 502. */
export async function readJson<T>(
  response: UpstreamResponse,
  parse: (value: unknown) => { success: true; data: T } | { success: false },
): Promise<{ ok: true; value: T } | { ok: false; error: GatewayError }> {
  let raw: unknown;
  try {
    raw = await response.body.json();
  } catch (err) {
    return { ok: false, error: upstreamTransportError(err) };
  }
  const parsed = parse(raw);
  if (!parsed.success) return { ok: false, error: new GatewayError("upstream_error", "The model provider sent a malformed answer") };
  return { ok: true, value: parsed.data };
}

/**
 * Relays an upstream SSE stream event by event, unchanged (name and data), as the events arrive.
 * An event carrying `usage.total_tokens` (image_generation.completed, transcript.text.done) is also
 * reported as usage. A top-level `error` becomes an error event with the upstream model name hidden;
 * `[DONE]` is passed on and ends the relay. These streams have no other end marker, so the end of the
 * body is a normal end.
 */
export async function* relayEvents(body: AsyncIterable<Buffer>, names: UpstreamFailureContext): AsyncGenerator<RelayedStreamEvent> {
  try {
    for await (const event of readSse(body)) {
      if (event.data === "[DONE]") {
        yield { type: "event", event: event.event, data: event.data };
        return;
      }
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        data = undefined; // not JSON: relayed as it came
      }
      const record = typeof data === "object" && data !== null ? (data as { error?: unknown; usage?: { total_tokens?: unknown } }) : {};
      if (typeof record.error === "object" && record.error !== null) {
        const error = record.error as { message?: unknown; type?: unknown; code?: unknown };
        yield {
          type: "error",
          error: {
            message: hideUpstreamModel(typeof error.message === "string" ? error.message : "The model provider failed mid-stream", names),
            type: typeof error.type === "string" ? error.type : "server_error",
            code: typeof error.code === "string" ? error.code : null,
          },
        };
        return;
      }
      const total = record.usage?.total_tokens;
      if (typeof total === "number" && Number.isFinite(total) && total >= 0) yield { type: "usage", totalTokens: total };
      yield { type: "event", event: event.event, data: event.data };
    }
  } catch (err) {
    if ((err as Error).name === "AbortError") return;
    yield { type: "error", error: { message: upstreamTransportError(err).message, type: "server_error", code: "upstream_error" } };
  }
}
