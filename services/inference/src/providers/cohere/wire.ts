import { z } from "zod";

/**
 * Cohere's v2 answers (docs.cohere.com/reference/embed and /rerank), read loosely: only what the
 * gateway uses is checked, and Cohere may add fields.
 */

const ApiMeta = z.looseObject({
  api_version: z.looseObject({ version: z.string() }).optional(),
  billed_units: z
    .looseObject({
      input_tokens: z.number().optional(),
      output_tokens: z.number().optional(),
      search_units: z.number().optional(),
    })
    .optional(),
  tokens: z.looseObject({ input_tokens: z.number().optional() }).optional(),
});

/** `POST /v2/embed` with `embedding_types: ["float"]`: one vector per text under `embeddings.float`. */
export const CohereEmbedResponse = z.looseObject({
  id: z.string().optional(),
  embeddings: z.looseObject({ float: z.array(z.array(z.number())) }),
  texts: z.array(z.string()).optional(),
  meta: ApiMeta.optional(),
});
export type CohereEmbedResponse = z.infer<typeof CohereEmbedResponse>;

/** `POST /v2/rerank`: results sorted by descending score; no documents in v2. */
export const CohereRerankResponse = z.looseObject({
  id: z.string().optional(),
  results: z.array(z.looseObject({ index: z.number().int(), relevance_score: z.number() })),
  meta: ApiMeta.optional(),
});
export type CohereRerankResponse = z.infer<typeof CohereRerankResponse>;
