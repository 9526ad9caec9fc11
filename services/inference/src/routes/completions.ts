import type { IRouter } from "express";
import { CompletionRequest } from "@gw/contracts";
import type { ChatRouteDeps } from "./chat";
import { mountModelRoute } from "./model-route";
import { openAIAnswer } from "./openai-answer";

/**
 * `POST /v1/completions`, OpenAI's legacy text completions, for `completion` models. Usage goes to
 * ingress as a header (JSON) or a trailer (stream), as on the chat route.
 */
export function mountCompletionsRoutes(router: IRouter, deps: ChatRouteDeps): void {
  mountModelRoute(router, deps, {
    path: "/v1/completions",
    type: "completion",
    schema: CompletionRequest,
    call: ({ adapter, ctx }, call) => adapter.completions?.(ctx, call),
    answer: openAIAnswer,
  });
}
