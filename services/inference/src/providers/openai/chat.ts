import { ChatCompletion, ChatCompletionChunk, type ChatCompletionRequest } from "@gw/contracts";
import { upstreamTransportError } from "../../upstream/errors";
import { readSse } from "../../upstream/sse";
import type { ChatResult, ChatStreamEvent, ProviderContext, UpstreamCall } from "../types";
import { postOpenAI, readJson } from "./passthrough";

/** Any OpenAI-compatible upstream: the request passes through with the upstream model name. */
export async function openaiChat(ctx: ProviderContext, call: UpstreamCall<ChatCompletionRequest>): Promise<ChatResult> {
  const stream = call.request.stream === true;
  const sent = await postOpenAI(ctx, call, "/chat/completions", JSON.stringify(upstreamBody(call.request, call.upstreamModel)), openaiHeaders(ctx, stream));
  if (!sent.ok) return sent;
  if (stream) {
    const showUsage = call.request.stream_options?.include_usage === true;
    return { ok: true, kind: "stream", events: relayChunks(sent.response.body, call.publicModel, showUsage) };
  }
  const completion = await readJson(sent.response, (v) => ChatCompletion.safeParse(v));
  if (!completion.ok) return completion;
  return { ok: true, kind: "json", completion: { ...completion.value, model: call.publicModel } };
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

/**
 * A stream always asks for usage, which the token limit needs whether or not the caller does
 * (`stream_options` is only valid on streamed calls, so a JSON call passes through untouched).
 */
function upstreamBody(request: ChatCompletionRequest, upstreamModel: string): ChatCompletionRequest {
  if (request.stream !== true) return { ...request, model: upstreamModel };
  return { ...request, model: upstreamModel, stream_options: { ...request.stream_options, include_usage: true } };
}

/**
 * Re-emits each upstream chunk with the public model name; `[DONE]` ends the stream cleanly. Usage
 * goes to the route as its own event; unless the caller asked for it (`showUsage`), the chunks are
 * made to look as if include_usage were off: no usage-only final chunk, no `usage: null` on the rest.
 */
async function* relayChunks(body: AsyncIterable<Buffer>, publicModel: string, showUsage: boolean): AsyncGenerator<ChatStreamEvent> {
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
      if (!chunk.success) continue;
      const { usage, ...rest } = chunk.data;
      if (usage) yield { type: "usage", usage };
      if (showUsage) yield { type: "chunk", chunk: { ...chunk.data, model: publicModel } };
      else if (!(usage && rest.choices.length === 0)) yield { type: "chunk", chunk: { ...rest, model: publicModel } };
    }
  } catch (err) {
    if ((err as Error).name === "AbortError") return;
    yield { type: "error", error: { message: upstreamTransportError(err).message, type: "server_error", code: "upstream_error" } };
    return;
  }
  yield { type: "error", error: { message: "The model provider ended the stream early", type: "server_error", code: "upstream_error" } };
}
