import type { ChatCompletionRequest, MessagesRequest } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { RouteAttempt } from "../fallback";
import type { ChatResult, MessagesResult, UpstreamCall } from "../providers/types";
import { chatRequestToMessages, messagesRequestToChat } from "./requests";
import { chatCompletionToMessage, messageToChatCompletion } from "./responses";
import { chatStreamToMessages, messagesStreamToChat } from "./stream";

/**
 * A chat call on any route: the provider's own chat operation when it has one, else its messages
 * operation with the request, the answer and the stream translated. Undefined when it has neither.
 */
export function chatOn(route: RouteAttempt, call: UpstreamCall<ChatCompletionRequest>): Promise<ChatResult> | undefined {
  const { adapter, ctx } = route;
  if (adapter.chat) return adapter.chat(ctx, call);
  if (!adapter.messages) return undefined;
  const translated = translateRequest(() => chatRequestToMessages(call.request, call.upstreamModel));
  if (!translated.ok) return Promise.resolve(translated);
  const request = translated.value;
  const includeUsage = call.request.stream_options?.include_usage === true;
  return adapter.messages(ctx, { ...call, request }).then((result): ChatResult => {
    if (!result.ok) return result;
    if (result.kind === "json") return { ok: true, kind: "json", completion: messageToChatCompletion(result.message, call.publicModel) };
    return { ok: true, kind: "stream", events: messagesStreamToChat(result.events, { publicModel: call.publicModel, includeUsage }) };
  });
}

/** A messages call on any route, the mirror of `chatOn`. */
export function messagesOn(route: RouteAttempt, call: UpstreamCall<MessagesRequest>): Promise<MessagesResult> | undefined {
  const { adapter, ctx } = route;
  if (adapter.messages) return adapter.messages(ctx, call);
  if (!adapter.chat) return undefined;
  const translated = translateRequest(() => messagesRequestToChat(call.request, call.upstreamModel));
  if (!translated.ok) return Promise.resolve(translated);
  const request = translated.value;
  return adapter.chat(ctx, { ...call, request }).then((result): MessagesResult => {
    if (!result.ok) return result;
    if (result.kind === "json") return { ok: true, kind: "json", message: chatCompletionToMessage(result.completion, call.publicModel) };
    return { ok: true, kind: "stream", events: chatStreamToMessages(result.events, { publicModel: call.publicModel }) };
  });
}

/** A request the target format cannot express is a 400 returned as a value, like any route failure. */
function translateRequest<T>(translate: () => T): { ok: true; value: T } | { ok: false; error: GatewayError } {
  try {
    return { ok: true, value: translate() };
  } catch (err) {
    if (err instanceof GatewayError) return { ok: false, error: err };
    throw err;
  }
}
