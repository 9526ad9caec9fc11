import express, { type IRouter } from "express";
import { internalHeaders, MessagesRequest, type MessagesStreamEvent, type MessagesUsage } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { routeLabel, sendError } from "@gw/service-kit";
import { withFallback } from "../fallback";
import { messagesOn } from "../translate/adapt";
import type { ChatRouteDeps } from "./chat";
import { clientGone, startSse, writeSse } from "./sse-writer";

/**
 * `POST /v1/messages`, the Anthropic format, for every chat model: Anthropic-kind providers answer
 * natively, the others through translation. Errors use the Anthropic envelope (the service-kit edge
 * picks it by path); stream events keep their `event:` names.
 */
export function mountMessagesRoutes(router: IRouter, deps: ChatRouteDeps): void {
  router.post("/v1/messages", routeLabel("/v1/messages"), express.json({ limit: deps.bodyLimit, type: () => true }), async (req, res) => {
    const parsed = MessagesRequest.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(res.locals.identity!, request.model, "chat");
    const signal = clientGone(res);
    const log: Logger = res.locals.log;

    const result = await withFallback(model, request.model, { ...deps, log, signal, credentials: res.locals.credentials }, (route) =>
      messagesOn(route, { request, publicModel: request.model, upstreamModel: route.upstreamModel, requestId: res.locals.requestId, signal }),
    );
    if (!result.ok) {
      if (signal.aborted) return;
      sendError(res, result.error, req.path);
      return;
    }
    if (result.kind === "json") {
      res.setHeader(internalHeaders.usageTokens, String(totalTokens(result.message.usage)));
      res.json(result.message);
      return;
    }
    startSse(res, [internalHeaders.usageTokens]);
    const usage = new StreamUsage();
    const end = () => {
      if (usage.seen) res.addTrailers({ [internalHeaders.usageTokens]: String(usage.total) });
      res.end();
    };
    for await (const item of result.events) {
      if (item.type === "error") {
        const error = { type: "error", error: { type: anthropicErrorType(item.error.type), message: item.error.message } };
        await writeSse(res, JSON.stringify(error), "error");
        end();
        return;
      }
      usage.observe(item.event);
      await writeSse(res, JSON.stringify(item.event), item.event.type);
    }
    if (!res.destroyed) end();
  });
}

function totalTokens(u: MessagesUsage): number {
  return u.input_tokens + u.output_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
}

/** Input tokens come with message_start; message_delta carries the cumulative output count. */
class StreamUsage {
  private input = 0;
  private output = 0;
  seen = false;

  /** Counts in message_delta (cumulative; newer streams repeat the input side there) replace earlier ones. */
  observe(event: MessagesStreamEvent): void {
    const usage =
      event.type === "message_start"
        ? (event as { message?: { usage?: Partial<MessagesUsage> } }).message?.usage
        : event.type === "message_delta"
          ? (event as { usage?: Partial<MessagesUsage> }).usage
          : undefined;
    if (!usage) return;
    const inputSide = [usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens];
    if (inputSide.some((n) => typeof n === "number")) {
      this.input = inputSide.reduce<number>((sum, n) => sum + (n ?? 0), 0);
    }
    if (typeof usage.output_tokens === "number") this.output = usage.output_tokens;
    this.seen = true;
  }

  get total(): number {
    return this.input + this.output;
  }
}

/** Anthropic's error types pass through; anything else (an OpenAI-side failure) is an api_error. */
function anthropicErrorType(type: string): string {
  const known = ["invalid_request_error", "authentication_error", "permission_error", "not_found_error", "rate_limit_error", "api_error", "overloaded_error", "timeout_error"];
  return known.includes(type) ? type : "api_error";
}
