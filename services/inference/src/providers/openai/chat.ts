import { ChatCompletion, ChatCompletionChunk, type ChatCompletionRequest } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { readBounded, sendUpstream } from "../../upstream/http";
import { upstreamHttpError, upstreamTransportError } from "../../upstream/errors";
import { readSse } from "../../upstream/sse";
import type { ChatResult, ChatStreamEvent, ProviderContext, UpstreamCall } from "../types";

/** Any OpenAI-compatible upstream: the request passes through with the upstream model name. */
export async function openaiChat(ctx: ProviderContext, call: UpstreamCall<ChatCompletionRequest>): Promise<ChatResult> {
  const names = { upstreamModel: call.upstreamModel, publicModel: call.publicModel };
  let response;
  try {
    response = await sendUpstream(ctx.agent, {
      url: `${ctx.config.base_url.replace(/\/+$/, "")}/chat/completions`,
      method: "POST",
      headers: openaiHeaders(ctx, call.request.stream === true),
      body: JSON.stringify({ ...call.request, model: call.upstreamModel }),
      timeoutMs: ctx.config.timeout_ms,
      signal: call.signal,
    });
  } catch (err) {
    return { ok: false, error: upstreamTransportError(err) };
  }
  if (response.statusCode !== 200) {
    const text = await readBounded(response.body).catch(() => "");
    return { ok: false, error: upstreamHttpError(response.statusCode, response.headers, text, names) };
  }
  if (call.request.stream === true) {
    return { ok: true, kind: "stream", events: relayChunks(response.body, call.publicModel) };
  }
  let parsed: unknown;
  try {
    parsed = await response.body.json();
  } catch (err) {
    return { ok: false, error: upstreamTransportError(err) };
  }
  const completion = ChatCompletion.safeParse(parsed);
  if (!completion.success) {
    return { ok: false, error: new GatewayError("upstream_error", "The model provider sent a malformed answer") };
  }
  return { ok: true, kind: "json", completion: { ...completion.data, model: call.publicModel } };
}

export function openaiHeaders(ctx: ProviderContext, stream: boolean): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    ...ctx.config.headers,
  };
  if (ctx.apiKey) headers.authorization = `Bearer ${ctx.apiKey}`;
  return headers;
}

/** Re-emits each upstream chunk with the public model name; `[DONE]` ends the stream cleanly. */
async function* relayChunks(body: AsyncIterable<Buffer>, publicModel: string): AsyncGenerator<ChatStreamEvent> {
  try {
    for await (const event of readSse(body)) {
      if (event.data === "[DONE]") return;
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        continue; // comments and keep-alives are not chunks
      }
      const upstreamError = (data as { error?: { message?: string; type?: string; code?: string } }).error;
      if (upstreamError) {
        yield {
          type: "error",
          error: { message: upstreamError.message ?? "The model provider failed mid-stream", type: upstreamError.type ?? "server_error", code: upstreamError.code ?? null },
        };
        return;
      }
      const chunk = ChatCompletionChunk.safeParse(data);
      if (chunk.success) yield { type: "chunk", chunk: { ...chunk.data, model: publicModel } };
    }
  } catch (err) {
    if ((err as Error).name === "AbortError") return;
    yield { type: "error", error: { message: upstreamTransportError(err).message, type: "server_error", code: "upstream_error" } };
    return;
  }
  yield { type: "error", error: { message: "The model provider ended the stream early", type: "server_error", code: "upstream_error" } };
}
