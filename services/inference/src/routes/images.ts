import type { IRouter } from "express";
import { ImageGenerationRequest } from "@gw/contracts";
import type { ChatRouteDeps } from "./chat";
import { mountModelRoute } from "./model-route";
import { writeRelayedStream } from "./relay-stream";

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
    answer(result) {
      if (result.kind === "stream") return { kind: "live", send: (res) => writeRelayedStream(res, result.events) };
      return { kind: "json", body: result.response, totalTokens: result.response.usage?.total_tokens };
    },
  });
}
