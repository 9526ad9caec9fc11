import type { IRouter } from "express";
import { EmbeddingsRequest, type EmbeddingEncoding, type EmbeddingsResponse } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { ChatRouteDeps } from "./chat";
import { mountModelRoute } from "./model-route";

/**
 * `POST /v1/embeddings` in OpenAI's format, for every embedding model. Whatever encoding the
 * provider answered in, the caller gets the one it asked for (float by default, as OpenAI does):
 * the openai SDK asks for base64 and silently yields empty vectors when it gets floats instead.
 */
export function mountEmbeddingsRoutes(router: IRouter, deps: ChatRouteDeps): void {
  mountModelRoute(router, deps, {
    path: "/v1/embeddings",
    type: "embedding",
    schema: EmbeddingsRequest,
    call: ({ adapter, ctx }, call) => adapter.embeddings?.(ctx, call),
    answer(result, request) {
      const body = encodeEmbeddings(result.response, request.encoding_format ?? "float");
      // Ingress settles its token-limit reservation with this, then removes the header.
      return { kind: "json", body, totalTokens: body.usage?.total_tokens };
    },
  });
}

/** Every vector in `format`: floats as the base64 of little-endian float32 bytes, or back. */
export function encodeEmbeddings(response: EmbeddingsResponse, format: EmbeddingEncoding): EmbeddingsResponse {
  const data = response.data.map((item) => {
    const { embedding } = item;
    if (format === "base64") return typeof embedding === "string" ? item : { ...item, embedding: floatsToBase64(embedding) };
    return typeof embedding === "string" ? { ...item, embedding: base64ToFloats(embedding) } : item;
  });
  return { ...response, data };
}

export function floatsToBase64(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (const [i, x] of vector.entries()) bytes.writeFloatLE(x, i * 4);
  return bytes.toString("base64");
}

export function base64ToFloats(text: string): number[] {
  const bytes = Buffer.from(text, "base64");
  if (bytes.length % 4 !== 0) throw new GatewayError("upstream_error", "The model provider sent a malformed embedding");
  const vector = new Array<number>(bytes.length / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
  return vector;
}
