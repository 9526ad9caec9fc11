import type { IRouter } from "express";
import type { GatewayConfig } from "@gw/config";
import { ChatCompletionRequest } from "@gw/contracts";
import type { Dispatcher } from "undici";
import type { Catalog, GenAiMetrics } from "@gw/service-kit";
import type { CircuitBreakers } from "../circuit-breaker";
import { chatOn } from "../translate/adapt";
import { mountModelRoute } from "./model-route";
import type { RouteHandlers } from "./route-handler";
import { openAIAnswer } from "./openai-answer";

export interface ChatRouteDeps {
  catalog: Catalog;
  config: GatewayConfig;
  secrets: Record<string, string | undefined>;
  agent: Dispatcher;
  bodyLimit: string;
  breakers?: CircuitBreakers;
  genAi?: GenAiMetrics;
  /** Every model route's handler, for the job worker. */
  handlers: RouteHandlers;
}

export function mountChatRoutes(router: IRouter, deps: ChatRouteDeps): void {
  mountModelRoute(router, deps, {
    path: "/v1/chat/completions",
    type: "chat",
    schema: ChatCompletionRequest,
    call: chatOn,
    answer: openAIAnswer,
  });
}
