import { Completion, type CompletionRequest } from "@gw/contracts";
import type { CompletionResult, ProviderContext, UpstreamCall } from "../types";
import { openaiHeaders } from "./chat";
import { postOpenAI, readJson } from "./passthrough";
import { failureContext } from "../../upstream/errors";
import { openaiUpstreamBody, relayOpenAIChunks } from "./stream-relay";

/**
 * Legacy text completions (`POST /completions`) on any OpenAI-compatible upstream: the request
 * passes through with the upstream model name; answers and chunks carry the public one.
 */
export async function openaiCompletions(ctx: ProviderContext, call: UpstreamCall<CompletionRequest>): Promise<CompletionResult> {
  const stream = call.request.stream === true;
  const sent = await postOpenAI(
    ctx,
    call,
    "/completions",
    JSON.stringify(openaiUpstreamBody(call.request, call.upstreamModel)),
    openaiHeaders(ctx, stream),
    !stream,
  );
  if (!sent.ok) return sent;
  if (stream) {
    const showUsage = call.request.stream_options?.include_usage === true;
    return { ok: true, kind: "stream", events: relayOpenAIChunks(sent.response.body, Completion, failureContext(ctx, call), showUsage) };
  }
  const read = await readJson(sent.response, (v) => Completion.safeParse(v));
  if (!read.ok) return read;
  return { ok: true, kind: "json", completion: { ...read.value, model: call.publicModel } };
}
