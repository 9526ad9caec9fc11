import type { IRouter } from "express";
import { OcrRequest } from "@gw/contracts";
import type { ChatRouteDeps } from "./chat";
import { mountModelRoute } from "./model-route";

/**
 * `POST /v1/ocr` in the public (Mistral, as LiteLLM serves it) format for every OCR model: the
 * recognised pages, `usage_info` and `"object": "ocr"` under the public model name.
 */
export function mountOcrRoutes(router: IRouter, deps: ChatRouteDeps): void {
  mountModelRoute(router, deps, {
    path: "/v1/ocr",
    type: "ocr",
    schema: OcrRequest,
    call: ({ adapter, ctx }, call) => adapter.ocr?.(ctx, call),
    answer(result) {
      // OCR is billed by pages, not tokens: 0 tokens count against the workspace's token limit.
      return { kind: "json", body: result.response, totalTokens: 0 };
    },
  });
}
