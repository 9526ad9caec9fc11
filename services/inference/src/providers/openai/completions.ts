import { Completion, type CompletionRequest } from "@gw/contracts";
import { hideUpstreamModel, upstreamTransportError, type UpstreamFailureContext } from "../../upstream/errors";
import { readSse } from "../../upstream/sse";
import type { CompletionResult, CompletionStreamEvent, ProviderContext, UpstreamCall } from "../types";
import { openaiHeaders } from "./chat";
import { failureNames, postOpenAI, readJson } from "./passthrough";

/**
 * Legacy text completions (`POST /completions`) on any OpenAI-compatible upstream: the request
 * passes through with the upstream model name; answers and chunks carry the public one.
 */
export async function openaiCompletions(ctx: ProviderContext, call: UpstreamCall<CompletionRequest>): Promise<CompletionResult> {
  const stream = call.request.stream === true;
  const sent = await postOpenAI(ctx, call, "/completions", JSON.stringify(upstreamBody(call.request, call.upstreamModel)), openaiHeaders(ctx, stream));
  if (!sent.ok) return sent;
  if (stream) {
    const showUsage = call.request.stream_options?.include_usage === true;
    return { ok: true, kind: "stream", events: relayCompletionChunks(sent.response.body, failureNames(call), showUsage) };
  }
  const read = await readJson(sent.response, (v) => Completion.safeParse(v));
  if (!read.ok) return read;
  return { ok: true, kind: "json", completion: { ...read.value, model: call.publicModel } };
}

/** As for chat: a stream always asks for usage, which the token limit needs whatever the caller asked. */
export function upstreamBody(request: CompletionRequest, upstreamModel: string): CompletionRequest {
  if (request.stream !== true) return { ...request, model: upstreamModel };
  return { ...request, model: upstreamModel, stream_options: { ...request.stream_options, include_usage: true } };
}

/**
 * Re-emits each `text_completion` chunk under the public model name; `[DONE]` ends the stream
 * cleanly. Unless the caller asked for usage, the chunks look as if include_usage were off: no
 * usage-only final chunk and no `usage: null` on the others.
 */
export async function* relayCompletionChunks(
  body: AsyncIterable<Buffer>,
  names: UpstreamFailureContext,
  showUsage: boolean,
): AsyncGenerator<CompletionStreamEvent> {
  const publicModel = names.publicModel;
  try {
    for await (const event of readSse(body)) {
      if (event.data === "[DONE]") return;
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        continue; // comments and keep-alives are not chunks
      }
      const upstreamError = (data as { error?: { message?: string; type?: string; code?: string } } | null)?.error;
      if (upstreamError) {
        yield {
          type: "error",
          error: {
            message: hideUpstreamModel(upstreamError.message ?? "The model provider failed mid-stream", names),
            type: upstreamError.type ?? "server_error",
            code: upstreamError.code ?? null,
          },
        };
        return;
      }
      const chunk = Completion.safeParse(data);
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
