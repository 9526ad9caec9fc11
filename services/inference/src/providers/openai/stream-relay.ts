import type { z } from "zod";
import type { Usage } from "@gw/contracts";
import { hideUpstreamModel, upstreamTransportError, type UpstreamFailureContext } from "../../upstream/errors";
import { readSse } from "../../upstream/sse";
import type { StreamFailure } from "../types";

/**
 * The upstream body of an OpenAI chat or text completion: the upstream model name, and on streams
 * always `include_usage`, which the token limit needs whether or not the caller asked for it
 * (`stream_options` is only valid on streamed calls, so a JSON call passes through untouched).
 */
export function openaiUpstreamBody<R extends { model: string; stream?: boolean | null; stream_options?: object | null }>(request: R, upstreamModel: string): R {
  if (request.stream !== true) return { ...request, model: upstreamModel };
  return { ...request, model: upstreamModel, stream_options: { ...request.stream_options, include_usage: true } };
}

type RelayEvent<C> = { type: "chunk"; chunk: C } | { type: "usage"; usage: Usage } | { type: "error"; error: StreamFailure };

/**
 * Re-emits each chunk of an OpenAI stream (chat or text completion) under the public model name;
 * `[DONE]` ends it cleanly, an `{"error":…}` event or a cut connection ends it with an error event.
 * Usage goes to the route as its own event; unless the caller asked for it (`showUsage`), the chunks
 * look as if include_usage were off: no usage-only final chunk, no `usage: null` on the others.
 */
export async function* relayOpenAIChunks<C extends { usage?: Usage | null; choices: unknown[] }>(
  body: AsyncIterable<Buffer>,
  schema: z.ZodType<C>,
  names: UpstreamFailureContext,
  showUsage: boolean,
): AsyncGenerator<RelayEvent<C>> {
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
        const message = hideUpstreamModel(upstreamError.message ?? "The model provider failed mid-stream", names);
        yield { type: "error", error: { message, type: upstreamError.type ?? "server_error", code: upstreamError.code ?? null } };
        return;
      }
      const parsed = schema.safeParse(data);
      if (!parsed.success) continue;
      const { usage, ...rest } = parsed.data;
      if (usage) yield { type: "usage", usage };
      if (showUsage) yield { type: "chunk", chunk: { ...parsed.data, model: names.publicModel } };
      else if (!(usage && rest.choices.length === 0)) yield { type: "chunk", chunk: { ...rest, model: names.publicModel } as unknown as C };
    }
  } catch (err) {
    if ((err as Error).name === "AbortError") return;
    yield { type: "error", error: { message: upstreamTransportError(err).message, type: "server_error", code: "upstream_error" } };
    return;
  }
  yield { type: "error", error: { message: "The model provider ended the stream early", type: "server_error", code: "upstream_error" } };
}
