import { randomUUID } from "node:crypto";
import { rerankDocumentText, type RerankRequest } from "@gw/contracts";
import { z } from "zod";
import { bearerJsonHeaders, malformed, postJson, upstreamUrl } from "../../upstream/json-call";
import { shapeRerankResults } from "../rerank-results";
import type { ProviderContext, RerankResult, UpstreamCall } from "../types";
import { failureContext } from "../../upstream/errors";

/**
 * Jina's answer (provider-wire-formats.md §5.2). `document` may be a plain string or `{text}`, or
 * absent; it is not used (see below), only tolerated. Jina gives no id.
 */
export const JinaRerankResponse = z.looseObject({
  model: z.string().optional(),
  usage: z.looseObject({ total_tokens: z.number().int().nonnegative() }).optional(),
  results: z.array(
    z.looseObject({
      index: z.number().int(),
      relevance_score: z.number(),
      document: z.union([z.string(), z.looseObject({ text: z.string().optional() }), z.null()]).optional(),
    }),
  ),
});
export type JinaRerankResponse = z.infer<typeof JinaRerankResponse>;

/**
 * Rerank on Jina (`POST {base_url}/v1/rerank`), converted to the public (Cohere v2) shape as LiteLLM
 * does: a made-up id, token usage in `meta.billed_units.total_tokens` (and `usage`). Documents are
 * never asked back (`return_documents: false`; Jina's default has changed over time): the request
 * already holds their text, which `return_documents` returns, whatever form Jina would echo it in.
 */
export async function jinaRerank(ctx: ProviderContext, call: UpstreamCall<RerankRequest>): Promise<RerankResult> {
  const { request } = call;
  const body: Record<string, unknown> = {
    model: call.upstreamModel,
    query: request.query,
    documents: request.documents.map(rerankDocumentText),
    return_documents: false,
  };
  if (request.top_n !== undefined) body.top_n = request.top_n;

  const result = await postJson(
    ctx.agent,
    {
      url: upstreamUrl(ctx.config.base_url, "/v1/rerank"),
      headers: bearerJsonHeaders(ctx.apiKey, ctx.config.headers),
      body,
      timeoutMs: ctx.config.timeout_ms,
      signal: call.signal,
      names: failureContext(ctx, call),
      errorBody: jinaErrorBody,
    },
    JinaRerankResponse,
  );
  if (!result.ok) return result;
  const results = shapeRerankResults(result.value.results, request);
  if (!results) return { ok: false, error: malformed() };
  const tokens = result.value.usage?.total_tokens;
  return {
    ok: true,
    response: {
      id: randomUUID(),
      results,
      ...(tokens === undefined ? {} : { meta: { billed_units: { total_tokens: tokens } }, usage: { total_tokens: tokens } }),
    },
    usageTokens: tokens,
  };
}

/**
 * Jina answers errors FastAPI-style: `{"detail": "..."}`, or for a validation failure
 * `{"detail": [{"loc": [...], "msg": "..."}]}`. Rewritten as `{message}` so the caller sees it.
 */
export function jinaErrorBody(text: string): string {
  try {
    const detail = (JSON.parse(text) as { detail?: unknown }).detail;
    if (typeof detail === "string") return JSON.stringify({ message: detail });
    if (Array.isArray(detail)) {
      const parts = detail.map((d: { loc?: unknown; msg?: unknown }) => {
        const where = Array.isArray(d.loc) ? d.loc.filter((p) => p !== "body").join(".") : "";
        return where ? `${where}: ${String(d.msg)}` : String(d.msg);
      });
      return JSON.stringify({ message: parts.join("; ") });
    }
  } catch {
    // not JSON: left as it is
  }
  return text;
}
