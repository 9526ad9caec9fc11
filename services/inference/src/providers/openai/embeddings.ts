import { EmbeddingsResponse, type EmbeddingsRequest } from "@gw/contracts";
import { postJson, upstreamUrl } from "../../upstream/json-call";
import type { EmbeddingsResult, ProviderContext, UpstreamCall } from "../types";
import { openaiHeaders } from "./chat";
import { failureContext } from "../../upstream/errors";

/**
 * Any OpenAI-compatible upstream: the request passes through (encoding_format and dimensions
 * included) with the upstream model name, and the answer comes back under the public one. Servers
 * that ignore `encoding_format` are fine: the route re-encodes the vectors as the caller asked.
 */
export async function openaiEmbeddings(ctx: ProviderContext, call: UpstreamCall<EmbeddingsRequest>): Promise<EmbeddingsResult> {
  const result = await postJson(
    ctx.agent,
    {
      url: upstreamUrl(ctx.config.base_url, "/embeddings"),
      headers: openaiHeaders(ctx, false),
      body: { ...call.request, model: call.upstreamModel },
      timeoutMs: ctx.config.timeout_ms,
      signal: call.signal,
      names: failureContext(ctx, call),
    },
    EmbeddingsResponse,
  );
  if (!result.ok) return result;
  return { ok: true, response: { ...result.value, model: call.publicModel } };
}
