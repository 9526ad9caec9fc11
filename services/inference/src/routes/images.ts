import type { IRouter } from "express";
import { ImageGenerationRequest } from "@gw/contracts";
import type { ChatRouteDeps } from "./chat";
import { mountModelRoute } from "./model-route";
import { writeRelayedStream } from "./relay-stream";
import { sendJson } from "./json-answer";

/**
 * `POST /v1/images/generations` for `image` models. The answer passes through as the upstream gave
 * it; GPT image models report token usage (DALL·E models report none, and ingress then keeps its
 * estimate for the call).
 */
export function mountImagesRoutes(router: IRouter, deps: ChatRouteDeps): void {
  mountModelRoute(router, deps, {
    path: "/v1/images/generations",
    type: "image",
    schema: ImageGenerationRequest,
    call: ({ adapter, ctx }, call) => adapter.imageGenerations?.(ctx, call),
    async respond(res, result) {
      if (result.kind === "stream") return writeRelayedStream(res, result.events);
      sendJson(res, result.response, result.response.usage?.total_tokens);
    },
  });
}
