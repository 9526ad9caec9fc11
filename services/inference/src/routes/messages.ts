import type { IRouter, Response } from "express";
import { MessagesRequest, type MessagesResponse, type MessagesStreamEvent, type MessagesUsage } from "@gw/contracts";
import type { MessagesStreamEvent as MessagesStreamItem } from "../providers/types";
import { messagesOn } from "../translate/adapt";
import type { ChatRouteDeps } from "./chat";
import { mountModelRoute } from "./model-route";
import { endSse, startSse, writeSse } from "./sse-writer";
import type { RouteAnswer } from "./route-handler";

/**
 * `POST /v1/messages`, the Anthropic format, for every chat model: Anthropic-kind providers answer
 * natively, the others through translation. Errors use the Anthropic envelope (the service-kit edge
 * picks it by path); stream events keep their `event:` names.
 */
export function mountMessagesRoutes(router: IRouter, deps: ChatRouteDeps): void {
  mountModelRoute(router, deps, { path: "/v1/messages", type: "chat", schema: MessagesRequest, call: messagesOn, answer: messagesAnswer });
}

function messagesAnswer(result: { kind: "json"; message: MessagesResponse } | { kind: "stream"; events: AsyncIterable<MessagesStreamItem> }): RouteAnswer {
  if (result.kind === "json") return { kind: "json", body: result.message, totalTokens: totalTokens(result.message.usage) };
  return { kind: "live", send: (res) => sendMessagesStream(res, result.events) };
}

async function sendMessagesStream(res: Response, events: AsyncIterable<MessagesStreamItem>): Promise<void> {
  startSse(res);
  const usage = new StreamUsage();
  const end = () => endSse(res, usage.seen ? usage.total : undefined);
  for await (const item of events) {
    if (item.type === "error") {
      const error = { type: "error", error: { type: anthropicErrorType(item.error.type), message: item.error.message } };
      await writeSse(res, JSON.stringify(error), "error");
      end();
      return;
    }
    usage.observe(item.event);
    await writeSse(res, JSON.stringify(item.event), item.event.type);
  }
  end();
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
  const known = [
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "not_found_error",
    "rate_limit_error",
    "api_error",
    "overloaded_error",
    "timeout_error",
  ];
  return known.includes(type) ? type : "api_error";
}
