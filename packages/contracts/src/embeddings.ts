import { z } from "zod";
import { ModelName } from "./model-name";

/**
 * OpenAI Embeddings payloads (`POST /v1/embeddings`, provider-wire-formats.md §3.5). Unknown
 * parameters pass through to OpenAI-compatible upstreams unchanged.
 */

/** OpenAI's own bound on the number of inputs in one request. */
export const MAX_EMBEDDING_INPUTS = 2048;

const tokenArray = z.array(z.number().int().nonnegative()).min(1, "a token array cannot be empty");

export const EmbeddingsInput = z.union([
  z.string().min(1, "input cannot be an empty string"),
  z.array(z.string().min(1, "input cannot contain empty strings")).min(1).max(MAX_EMBEDDING_INPUTS),
  tokenArray,
  z.array(tokenArray).min(1).max(MAX_EMBEDDING_INPUTS),
]);
export type EmbeddingsInput = z.infer<typeof EmbeddingsInput>;

export const EmbeddingEncoding = z.enum(["float", "base64"]);
export type EmbeddingEncoding = z.infer<typeof EmbeddingEncoding>;

export const EmbeddingsRequest = z.looseObject({
  model: ModelName,
  input: EmbeddingsInput,
  encoding_format: EmbeddingEncoding.optional(),
  dimensions: z.number().int().positive().optional(),
  user: z.string().optional(),
});
export type EmbeddingsRequest = z.infer<typeof EmbeddingsRequest>;

/** A vector as floats, or as the base64 of its little-endian float32 bytes. */
export const Embedding = z.looseObject({
  object: z.literal("embedding"),
  index: z.number().int().nonnegative(),
  embedding: z.union([z.array(z.number()), z.string()]),
});
export type Embedding = z.infer<typeof Embedding>;

export const EmbeddingsUsage = z.looseObject({
  prompt_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
});
export type EmbeddingsUsage = z.infer<typeof EmbeddingsUsage>;

export const EmbeddingsResponse = z.looseObject({
  object: z.literal("list"),
  data: z.array(Embedding),
  model: z.string(),
  /** OpenAI always sends it; some compatible servers do not, and then nothing is made up. */
  usage: EmbeddingsUsage.optional(),
});
export type EmbeddingsResponse = z.infer<typeof EmbeddingsResponse>;
