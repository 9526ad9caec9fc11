import express, { type IRouter } from "express";
import { EmbeddingsRequest, internalHeaders, type EmbeddingEncoding, type EmbeddingsResponse } from "@gw/contracts";
import { fromZodError, GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { routeLabel, sendError } from "@gw/service-kit";
import { withFallback } from "../fallback";
import type { ChatRouteDeps } from "./chat";
import { clientGone } from "./sse-writer";

/**
 * `POST /v1/embeddings` in OpenAI's format, for every embedding model. Whatever encoding the
 * provider answered in, the caller gets the one it asked for (float by default, as OpenAI does):
 * the openai SDK asks for base64 and silently yields empty vectors when it gets floats instead.
 */
export function mountEmbeddingsRoutes(router: IRouter, deps: ChatRouteDeps): void {
  router.post("/v1/embeddings", routeLabel("/v1/embeddings"), express.json({ limit: deps.bodyLimit, type: () => true }), async (req, res) => {
    const parsed = EmbeddingsRequest.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(res.locals.identity!, request.model, "embedding");
    const signal = clientGone(res);
    const log: Logger = res.locals.log;

    const result = await withFallback(model, request.model, { ...deps, log, signal, credentials: res.locals.credentials }, (route) =>
      route.adapter.embeddings?.(route.ctx, {
        request,
        publicModel: request.model,
        upstreamModel: route.upstreamModel,
        requestId: res.locals.requestId,
        signal,
      }),
    );
    if (!result.ok) {
      if (signal.aborted) return;
      sendError(res, result.error, req.path);
      return;
    }
    const answer = encodeEmbeddings(result.response, request.encoding_format ?? "float");
    // Ingress settles its token-limit reservation with this, then removes the header.
    if (answer.usage) res.setHeader(internalHeaders.usageTokens, String(answer.usage.total_tokens));
    res.json(answer);
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
  vector.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
  return bytes.toString("base64");
}

export function base64ToFloats(text: string): number[] {
  const bytes = Buffer.from(text, "base64");
  if (bytes.length % 4 !== 0) throw new GatewayError("upstream_error", "The model provider sent a malformed embedding");
  const vector = new Array<number>(bytes.length / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
  return vector;
}
