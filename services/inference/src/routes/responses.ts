import type { IRouter } from "express";
import { ResponsesRequest, type ResponsesStreamEvent, type ResponsesUsage } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import { jsonBody } from "@gw/service-kit";
import { withFallback } from "../fallback";
import { chatOn } from "../translate/adapt";
import { chatCompletionToResponse, randomIds, responseShell, responsesRequestToChat } from "../translate/responses-api";
import { chatStreamToResponses } from "../translate/responses-api-stream";
import type { ChatRouteDeps } from "./chat";
import { serveRoute } from "./route-handler";
import { endSse, startSse, writeSse } from "./sse-writer";

/**
 * `POST /v1/responses`, the OpenAI Responses API, for every chat model: served statelessly on the
 * chat operation (translate/responses-api.ts), so Anthropic-kind providers answer it too through
 * `chatOn`. Nothing is stored: `previous_response_id` and `conversation` are refused, and every
 * answer says `store: false`. Streams are named SSE events with no `[DONE]`, as OpenAI sends them.
 */
export function mountResponsesRoutes(router: IRouter, deps: ChatRouteDeps): void {
  serveRoute(router, deps.handlers, "/v1/responses", jsonBody(deps.bodyLimit), async (input, ctx) => {
    const parsed = ResponsesRequest.safeParse(input.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(ctx.identity, request.model, "chat");
    // Translated once, before any upstream is asked: a parameter no route can honour is a 400 now.
    const { chat, inCallerTerms } = responsesRequestToChat(request);
    const { signal, log, credentials, meter } = ctx;
    const result = await withFallback(model, request.model, { ...deps, log, signal, credentials, meter }, (route) =>
      chatOn(route, { request: chat, publicModel: request.model, upstreamModel: route.upstreamModel, requestId: ctx.requestId, signal }),
    );
    if (!result.ok) return { kind: "error", error: inCallerTerms(result.error) };
    const shell = responseShell(request, randomIds("resp"));
    // Ingress reconciles its token-limit reservation with the real usage, then removes the field.
    if (result.kind === "json") {
      const response = chatCompletionToResponse(result.completion, shell);
      return { kind: "json", body: response, totalTokens: response.usage?.total_tokens };
    }
    return {
      kind: "live",
      async send(res) {
        startSse(res);
        let usage: ResponsesUsage | undefined;
        for await (const event of chatStreamToResponses(result.events, { shell })) {
          usage = usageOf(event) ?? usage;
          await writeSse(res, JSON.stringify(event), event.type);
        }
        endSse(res, usage?.total_tokens);
      },
    };
  });
}

/** The last event (completed, incomplete or failed) carries the whole response, usage included. */
function usageOf(event: ResponsesStreamEvent): ResponsesUsage | undefined {
  const response = (event as { response?: { usage?: ResponsesUsage } }).response;
  return response?.usage;
}
