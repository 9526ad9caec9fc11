import express, { type IRouter } from "express";
import { ImageGenerationRequest, internalHeaders } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { routeLabel, sendError } from "@gw/service-kit";
import { withFallback } from "../fallback";
import type { ChatRouteDeps } from "./chat";
import { writeRelayedStream } from "./relay-stream";
import { clientGone } from "./sse-writer";

/**
 * `POST /v1/images/generations` for `image` models. The answer passes through as the upstream gave
 * it; GPT image models report token usage (DALL·E models report none, and ingress then keeps its
 * estimate for the call).
 */
export function mountImagesRoutes(router: IRouter, deps: ChatRouteDeps): void {
  router.post(
    "/v1/images/generations",
    routeLabel("/v1/images/generations"),
    express.json({ limit: deps.bodyLimit, type: () => true }),
    async (req, res) => {
      const parsed = ImageGenerationRequest.safeParse(req.body);
      if (!parsed.success) throw fromZodError(parsed.error);
      const request = parsed.data;
      const model = deps.catalog.resolve(res.locals.identity!, request.model, "image");
      const signal = clientGone(res);
      const log: Logger = res.locals.log;

      const result = await withFallback(model, request.model, { ...deps, log, signal, credentials: res.locals.credentials }, ({ adapter, ctx, upstreamModel }) =>
        adapter.imageGenerations?.(ctx, { request, publicModel: request.model, upstreamModel, requestId: res.locals.requestId, signal }),
      );
      if (!result.ok) {
        if (signal.aborted) return;
        sendError(res, result.error, req.path);
        return;
      }
      if (result.kind === "stream") {
        await writeRelayedStream(res, result.events);
        return;
      }
      const usage = result.response.usage;
      if (usage) res.setHeader(internalHeaders.usageTokens, String(usage.total_tokens));
      res.json(result.response);
    },
  );
}
