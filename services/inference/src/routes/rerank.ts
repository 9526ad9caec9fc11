import type { IRouter } from "express";
import { RerankRequest } from "@gw/contracts";
import type { ChatRouteDeps } from "./chat";
import { mountModelRoute } from "./model-route";

/**
 * `POST /v1/rerank` in the public (Cohere v2) format for every rerank model: results by descending
 * relevance, at most `top_n`, with the document text when `return_documents` is set.
 */
export function mountRerankRoutes(router: IRouter, deps: ChatRouteDeps): void {
  mountModelRoute(router, deps, {
    path: "/v1/rerank",
    type: "rerank",
    schema: RerankRequest,
    call: ({ adapter, ctx }, call) => adapter.rerank?.(ctx, call),
    answer(result) {
      // Token-billed providers report their count; search-unit-billed ones report 0 tokens. Without
      // either, ingress keeps its estimate.
      return { kind: "json", body: result.response, totalTokens: result.usageTokens };
    },
  });
}
