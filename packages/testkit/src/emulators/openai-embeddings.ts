import { countTokens, defaultEmbeddingDimensions, embeddingVector, float32ToBase64 } from "./synthetic";
import type { JsonObject } from "./synthetic";

/**
 * `POST /embeddings` (provider-wire-formats.md §3.5, schema `CreateEmbeddingResponse`).
 * `input` may be a string, strings, a token array or token arrays; token arrays are embedded from
 * their decimal text, so equal inputs always give equal vectors. `encoding_format: "base64"` is the
 * little-endian float32 bytes of the same vector the float format returns; the openai SDK asks for
 * base64 by default and silently yields [] if it gets floats instead (§0).
 */
export function embeddingsResponse(body: JsonObject): JsonObject {
  const model = typeof body.model === "string" ? body.model : "";
  const dims = typeof body.dimensions === "number" && body.dimensions > 0 ? Math.floor(body.dimensions) : defaultEmbeddingDimensions(model);
  const base64 = body.encoding_format === "base64";
  const inputs = normaliseInput(body.input);
  let promptTokens = 0;
  const data = inputs.map((input, index) => {
    promptTokens += typeof input === "string" ? countTokens(input) : input.length;
    const vector = embeddingVector(typeof input === "string" ? input : input.join(" "), dims);
    return { object: "embedding", index, embedding: base64 ? float32ToBase64(vector) : Array.from(vector) };
  });
  return { object: "list", data, model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } };
}

type Input = string | number[];

function normaliseInput(input: unknown): Input[] {
  if (typeof input === "string") return [input];
  if (!Array.isArray(input) || input.length === 0) return [];
  if (input.every((x) => typeof x === "number")) return [input];
  return input.filter((x): x is Input => typeof x === "string" || (Array.isArray(x) && x.every((n) => typeof n === "number")));
}

export function hasEmbeddingInput(body: JsonObject): boolean {
  return normaliseInput(body.input).length > 0;
}
