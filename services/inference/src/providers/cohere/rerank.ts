import { randomUUID } from "node:crypto";
import { rerankDocumentText, type RerankRequest } from "@gw/contracts";
import { bearerJsonHeaders, malformed, postJson, upstreamUrl } from "../../upstream/json-call";
import { shapeRerankResults } from "../rerank-results";
import type { ProviderContext, RerankResult, UpstreamCall } from "../types";
import { CohereRerankResponse } from "./wire";
import { failureContext } from "../../upstream/errors";

/**
 * Rerank on Cohere's v2 API (`POST {base_url}/v2/rerank`), whose shape is already the public one.
 * v2 takes documents as strings only and never returns them, so `{text}` documents are sent as
 * their text and `return_documents` is served from the request itself. Cohere bills search units,
 * not tokens: the usage reported for the token limit is 0.
 */
export async function cohereRerank(ctx: ProviderContext, call: UpstreamCall<RerankRequest>): Promise<RerankResult> {
  const { request } = call;
  const body: Record<string, unknown> = {
    model: call.upstreamModel,
    query: request.query,
    documents: request.documents.map(rerankDocumentText),
  };
  if (request.top_n !== undefined) body.top_n = request.top_n;
  if (request.max_tokens_per_doc !== undefined) body.max_tokens_per_doc = request.max_tokens_per_doc;

  const result = await postJson(
    ctx.agent,
    {
      url: upstreamUrl(ctx.config.base_url, "/v2/rerank"),
      headers: bearerJsonHeaders(ctx.apiKey, ctx.config.headers),
      body,
      timeoutMs: ctx.config.timeout_ms,
      signal: call.signal,
      names: failureContext(ctx, call),
    },
    CohereRerankResponse,
  );
  if (!result.ok) return result;
  const results = shapeRerankResults(result.value.results, request);
  if (!results) return { ok: false, error: malformed() };
  const { id, meta } = result.value;
  return {
    ok: true,
    // Cohere's meta (api_version, billed_units.search_units, warnings) is the public format's own.
    response: { id: id ?? randomUUID(), results, ...(meta ? { meta } : {}) },
    usageTokens: 0,
  };
}
