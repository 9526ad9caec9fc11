import express, { type IRouter } from "express";
import { internalHeaders, RerankRequest } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { routeLabel, sendError } from "@gw/service-kit";
import { withFallback } from "../fallback";
import type { ChatRouteDeps } from "./chat";
import { clientGone } from "./sse-writer";

/**
 * `POST /v1/rerank` in the public (Cohere v2) format for every rerank model: results by descending
 * relevance, at most `top_n`, with the document text when `return_documents` is set.
 */
export function mountRerankRoutes(router: IRouter, deps: ChatRouteDeps): void {
  router.post("/v1/rerank", routeLabel("/v1/rerank"), express.json({ limit: deps.bodyLimit, type: () => true }), async (req, res) => {
    const parsed = RerankRequest.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(res.locals.identity!, request.model, "rerank");
    const signal = clientGone(res);
    const log: Logger = res.locals.log;

    const result = await withFallback(model, request.model, { ...deps, log, signal, credentials: res.locals.credentials }, (route) =>
      route.adapter.rerank?.(route.ctx, {
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
    // Token-billed providers report their count; search-unit-billed ones report 0 tokens. Without
    // either, ingress keeps its estimate.
    if (result.usageTokens !== undefined) res.setHeader(internalHeaders.usageTokens, String(result.usageTokens));
    res.json(result.response);
  });
}
