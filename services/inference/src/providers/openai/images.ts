import { ImagesResponse, type ImageGenerationRequest } from "@gw/contracts";
import type { ImagesResult, ProviderContext, UpstreamCall } from "../types";
import { openaiHeaders } from "./chat";
import { isEventStream, postOpenAI, readJson, relayEvents } from "./passthrough";
import { failureContext } from "../../upstream/errors";

/**
 * Image generation (`POST /images/generations`) on any OpenAI-compatible upstream: the request
 * passes through with the upstream model name and the answer comes back as it was (it names no
 * model). A streamed answer (GPT image models, `stream: true`) is relayed event by event.
 */
export async function openaiImages(ctx: ProviderContext, call: UpstreamCall<ImageGenerationRequest>): Promise<ImagesResult> {
  const stream = call.request.stream === true;
  const body = JSON.stringify({ ...call.request, model: call.upstreamModel });
  const sent = await postOpenAI(ctx, call, "/images/generations", body, openaiHeaders(ctx, stream));
  if (!sent.ok) return sent;
  // Decided by what came back: an upstream that cannot stream images answers JSON to stream:true.
  if (isEventStream(sent.response)) return { ok: true, kind: "stream", events: relayEvents(sent.response.body, failureContext(ctx, call)) };
  const read = await readJson(sent.response, (v) => ImagesResponse.safeParse(v));
  if (!read.ok) return read;
  return { ok: true, kind: "json", response: read.value };
}
