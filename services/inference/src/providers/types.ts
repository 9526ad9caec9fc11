import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  MessagesRequest,
  MessagesResponse,
  MessagesStreamEvent as MessagesEvent,
  Usage,
} from "@gw/contracts";
import type { ProviderConfig } from "@gw/config";
import type { GatewayError } from "@gw/errors";
import type { Dispatcher } from "undici";

/** What an adapter gets to reach its upstream. The credential always comes from the server. */
export interface ProviderContext {
  name: string;
  config: ProviderConfig;
  apiKey: string | undefined;
  agent: Dispatcher;
}

export interface UpstreamCall<Req> {
  request: Req;
  publicModel: string;
  upstreamModel: string;
  requestId: string;
  signal: AbortSignal;
}

/** A mid-stream failure, sent to the client as an SSE error event in the route's format. */
export interface StreamFailure {
  message: string;
  type: string;
  code: string | null;
}

/**
 * `usage` is what the upstream reported for the whole call; the route records it (for the token
 * limit) and writes nothing, so whether the client sees usage stays the adapter's concern.
 */
export type ChatStreamEvent =
  | { type: "chunk"; chunk: ChatCompletionChunk }
  | { type: "usage"; usage: Usage }
  | { type: "error"; error: StreamFailure };

/**
 * Expected failures are values (with `retryable`), so the fallback loop decides what happens next;
 * an adapter resolves as soon as the upstream's headers are in, before any byte reaches the client.
 */
export type ChatResult =
  | { ok: true; kind: "json"; completion: ChatCompletion }
  | { ok: true; kind: "stream"; events: AsyncIterable<ChatStreamEvent> }
  | { ok: false; error: GatewayError };

/**
 * A Messages stream, event by event (`event.type` is the SSE event name). Usage is read from the
 * `message_start` and `message_delta` events themselves; a mid-stream failure is an error event.
 */
export type MessagesStreamEvent = { type: "event"; event: MessagesEvent } | { type: "error"; error: StreamFailure };

export type MessagesResult =
  | { ok: true; kind: "json"; message: MessagesResponse }
  | { ok: true; kind: "stream"; events: AsyncIterable<MessagesStreamEvent> }
  | { ok: false; error: GatewayError };

/**
 * What a provider can do, one function per operation in its own format. A route asks for the
 * operation in the caller's format and, when the provider only speaks the other one, translates
 * (services/inference/src/translate).
 */
export interface ProviderAdapter {
  chat?(ctx: ProviderContext, call: UpstreamCall<ChatCompletionRequest>): Promise<ChatResult>;
  messages?(ctx: ProviderContext, call: UpstreamCall<MessagesRequest>): Promise<MessagesResult>;
}
