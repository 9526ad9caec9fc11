import { ChatCompletion, ChatCompletionChunk, type ChatCompletionRequest } from "@gw/contracts";
import type { ChatResult, ProviderContext, UpstreamCall } from "../types";
import { postOpenAI, readJson } from "./passthrough";
import { failureContext } from "../../upstream/errors";
import { openaiUpstreamBody, relayOpenAIChunks } from "./stream-relay";

/** Any OpenAI-compatible upstream: the request passes through with the upstream model name. */
export function openaiChat(ctx: ProviderContext, call: UpstreamCall<ChatCompletionRequest>): Promise<ChatResult> {
  return postChat(ctx, call, openaiUpstreamBody(call.request, call.upstreamModel));
}

/**
 * Posts a chat body to an OpenAI-compatible upstream and reads its answer under the public model
 * name: the stream relayed chunk by chunk (usage shown only if the caller asked for it), or the JSON.
 */
export async function postChat(ctx: ProviderContext, call: UpstreamCall<ChatCompletionRequest>, body: object): Promise<ChatResult> {
  const stream = call.request.stream === true;
  const sent = await postOpenAI(ctx, call, "/chat/completions", JSON.stringify(body), openaiHeaders(ctx, stream), !stream);
  if (!sent.ok) return sent;
  if (stream) {
    const showUsage = call.request.stream_options?.include_usage === true;
    return { ok: true, kind: "stream", events: relayOpenAIChunks(sent.response.body, ChatCompletionChunk, failureContext(ctx, call), showUsage) };
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
