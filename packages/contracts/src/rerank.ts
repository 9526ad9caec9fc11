import { z } from "zod";
import { ModelName } from "./model-name";

/**
 * `POST /v1/rerank` in the public format: Cohere's v2 shape, as LiteLLM uses it for every provider
 * (provider-wire-formats.md §5). A document may be a string or `{text}` (Cohere v1's object form);
 * either way it is the text that gets ranked.
 */

/** Cohere's limit per request (it recommends at most 1,000 documents). */
export const MAX_RERANK_DOCUMENTS = 1000;

export const RerankDocument = z.union([z.string(), z.looseObject({ text: z.string() })]);
export type RerankDocument = z.infer<typeof RerankDocument>;

export const RerankRequest = z.looseObject({
  model: ModelName,
  query: z.string().min(1, "query cannot be empty"),
  documents: z.array(RerankDocument).min(1, "documents cannot be empty").max(MAX_RERANK_DOCUMENTS),
  top_n: z.number().int().positive().optional(),
  return_documents: z.boolean().optional(),
  max_tokens_per_doc: z.number().int().positive().optional(),
});
export type RerankRequest = z.infer<typeof RerankRequest>;

export const RerankResult = z.object({
  index: z.number().int().nonnegative(),
  relevance_score: z.number(),
  document: z.object({ text: z.string() }).optional(),
});
export type RerankResult = z.infer<typeof RerankResult>;

export const RerankBilledUnits = z.looseObject({
  search_units: z.number().optional(),
  total_tokens: z.number().optional(),
});

/**
 * Results are ordered by descending `relevance_score`, at most `top_n` of them. `meta.billed_units`
 * is what the provider billed (Cohere: search units; token-billed providers: total_tokens), and
 * `usage` is set only when the provider counted tokens.
 */
export const RerankResponse = z.object({
  id: z.string(),
  results: z.array(RerankResult),
  meta: z
    .looseObject({
      api_version: z.looseObject({ version: z.string() }).optional(),
      billed_units: RerankBilledUnits.optional(),
    })
    .optional(),
  usage: z.object({ total_tokens: z.number().int().nonnegative() }).optional(),
});
export type RerankResponse = z.infer<typeof RerankResponse>;

/** The text of a document, whichever form the caller sent it in. */
export function rerankDocumentText(document: RerankDocument): string {
  return typeof document === "string" ? document : document.text;
}
