import type { ResponsesOutputContent, ResponsesOutputItem, ResponsesResponse, ResponsesStreamEvent, Usage } from "@gw/contracts";
import type { ChatStreamEvent, StreamFailure } from "../providers/types";
import { endOf, finishedResponse, nowSeconds, outputText, randomIds, responsesUsageOf, type IdMaker } from "./responses-api";

/**
 * Chat chunks → Responses API stream events (rules in README.md beside this file, "Responses API").
 * Pure: reads the source, keeps a little state and yields; each event carries its `type` (also the
 * SSE event name) and a `sequence_number` counting from 0.
 */

export interface ChatToResponsesOptions {
  /** `responseShell(...)`: the in-progress Response that `response.created` announces. */
  shell: ResponsesResponse;
  ids?: IdMaker;
  now?: () => number;
}

const ENDED_EARLY = "The model provider ended the stream early";

type Message = Extract<ResponsesOutputItem, { type: "message" }>;
type FunctionCall = Extract<ResponsesOutputItem, { type: "function_call" }>;
type Event = Record<string, unknown> & { type: string };

interface OpenPart {
  kind: "output_text" | "refusal";
  index: number;
  text: string;
}

interface Call {
  id: string;
  name: string;
  /** Arguments received before the call could open (its name unknown yet). */
  pending: string;
  item?: FunctionCall;
  outputIndex: number;
  closed: boolean;
}

interface ToolFragment {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown } | null;
}

export async function* chatStreamToResponses(events: AsyncIterable<ChatStreamEvent>, opts: ChatToResponsesOptions): AsyncGenerator<ResponsesStreamEvent> {
  const ids = opts.ids ?? randomIds;
  const now = opts.now ?? nowSeconds;
  let sequence = 0;
  const stamp = (event: Event): ResponsesStreamEvent => ({ ...event, sequence_number: sequence++ });

  const output: ResponsesOutputItem[] = [];
  let message: { item: Message; outputIndex: number; part?: OpenPart } | undefined;
  const calls = new Map<number, Call>(); // by the chunk's tool call index
  let finish: string | null | undefined; // undefined until the finish chunk
  let usage: Usage | undefined;

  yield stamp({ type: "response.created", response: opts.shell });
  yield stamp({ type: "response.in_progress", response: opts.shell });

  function* closePart(): Generator<ResponsesStreamEvent> {
    const part = message?.part;
    if (!message || !part) return;
    const where = { item_id: message.item.id, output_index: message.outputIndex, content_index: part.index };
    const done = contentOf(part);
    message.item.content[part.index] = done;
    message.part = undefined;
    if (part.kind === "output_text") yield stamp({ type: "response.output_text.done", ...where, text: part.text, logprobs: [] });
    else yield stamp({ type: "response.refusal.done", ...where, refusal: part.text });
    yield stamp({ type: "response.content_part.done", ...where, part: done });
  }

  function* closeMessage(status: Message["status"]): Generator<ResponsesStreamEvent> {
    if (!message) return;
    yield* closePart();
    message.item.status = status;
    yield stamp({ type: "response.output_item.done", output_index: message.outputIndex, item: message.item });
    message = undefined;
  }

  /** The call whose fragments go out as they come; the others wait, so items never interleave. */
  let live: Call | undefined;
  const waiting: Call[] = [];

  function* openCall(call: Call): Generator<ResponsesStreamEvent> {
    yield* closeMessage("completed");
    const id = ids("fc");
    call.item = { type: "function_call", id, call_id: call.id || `call_${id.slice("fc_".length)}`, name: call.name, arguments: "", status: "in_progress" };
    call.outputIndex = output.push(call.item) - 1;
    live = call;
    yield stamp({ type: "response.output_item.added", output_index: call.outputIndex, item: { ...call.item } });
    if (call.pending) yield* callDelta(call, call.pending);
    call.pending = "";
  }

  function* callDelta(call: Call, delta: string): Generator<ResponsesStreamEvent> {
    if (!call.item || delta === "") return;
    call.item.arguments += delta;
    yield stamp({ type: "response.function_call_arguments.delta", item_id: call.item.id, output_index: call.outputIndex, delta });
  }

  function* closeCall(call: Call): Generator<ResponsesStreamEvent> {
    if (call.closed) return;
    if (!call.item) yield* openCall(call); // a call whose name never came still goes out, nameless
    call.closed = true;
    if (live === call) live = undefined;
    const item = call.item as FunctionCall;
    item.status = "completed";
    yield stamp({
      type: "response.function_call_arguments.done",
      item_id: item.id,
      output_index: call.outputIndex,
      name: item.name,
      arguments: item.arguments,
    });
    yield stamp({ type: "response.output_item.done", output_index: call.outputIndex, item });
  }

  /** Opens the waiting calls in order while none is live (a call opens once its name is known). */
  function* promote(): Generator<ResponsesStreamEvent> {
    while (!live && waiting[0]?.name) {
      const next = waiting.shift() as Call;
      yield* openCall(next);
      if (waiting.length > 0 && isCompleteJson(next.item?.arguments)) yield* closeCall(next);
    }
  }

  /** Text or the finish: the live call closes, and every waiting call goes out whole, in order. */
  function* flushCalls(): Generator<ResponsesStreamEvent> {
    if (live) yield* closeCall(live);
    for (let next = waiting.shift(); next; next = waiting.shift()) yield* closeCall(next);
  }

  function* closeAll(messageStatus: Message["status"]): Generator<ResponsesStreamEvent> {
    yield* closeMessage(messageStatus);
    yield* flushCalls();
  }

  function* text(kind: OpenPart["kind"], delta: string): Generator<ResponsesStreamEvent> {
    if (!message) {
      // Text after function calls (unusual) starts a new message after them.
      yield* flushCalls();
      const item: Message = { type: "message", id: ids("msg"), status: "in_progress", role: "assistant", content: [] };
      message = { item, outputIndex: output.push(item) - 1 };
      yield stamp({ type: "response.output_item.added", output_index: message.outputIndex, item: { ...item, content: [] } });
    }
    if (message.part && message.part.kind !== kind) yield* closePart();
    const where = { item_id: message.item.id, output_index: message.outputIndex };
    if (!message.part) {
      const part: OpenPart = { kind, index: message.item.content.length, text: "" };
      message.item.content.push(contentOf(part));
      message.part = part;
      yield stamp({ type: "response.content_part.added", ...where, content_index: part.index, part: contentOf(part) });
    }
    if (delta === "") return;
    message.part.text += delta;
    const contentIndex = message.part.index;
    if (kind === "output_text") yield stamp({ type: "response.output_text.delta", ...where, content_index: contentIndex, delta, logprobs: [] });
    else yield stamp({ type: "response.refusal.delta", ...where, content_index: contentIndex, delta });
  }

  function* toolFragment(fragment: ToolFragment, position: number): Generator<ResponsesStreamEvent> {
    const key = typeof fragment.index === "number" ? fragment.index : position;
    const id = typeof fragment.id === "string" ? fragment.id : "";
    let call = calls.get(key);
    // A different id on a known index is a new call (servers without `index` send every call as 0).
    if (!call || (id && call.id && id !== call.id)) {
      call = { id, name: "", pending: "", outputIndex: -1, closed: false };
      calls.set(key, call);
      waiting.push(call);
    }
    if (call.closed) return; // only after its arguments were complete JSON, which nothing can extend
    if (!call.id && id) call.id = id;
    const name = fragment.function?.name;
    if (!call.name && typeof name === "string") call.name = name;
    const raw = fragment.function?.arguments;
    const args = typeof raw === "string" ? raw : raw != null && typeof raw === "object" ? JSON.stringify(raw) : "";
    if (call === live) {
      yield* callDelta(call, args);
      if (waiting.length > 0 && isCompleteJson(call.item?.arguments)) yield* closeCall(call);
    } else {
      call.pending += args;
      // OpenAI's own parallel calls come one after the other: the live one is complete JSON by now.
      if (live && isCompleteJson(live.item?.arguments)) yield* closeCall(live);
    }
    yield* promote();
  }

  function* fail(failure: StreamFailure): Generator<ResponsesStreamEvent> {
    yield stamp({ type: "error", code: failure.code ?? failure.type, message: failure.message, param: null });
    // Items cut short stay in the failed response as far as they got, marked incomplete.
    if (message?.part) message.item.content[message.part.index] = contentOf(message.part);
    for (const item of output) if (item.status === "in_progress") item.status = "incomplete";
    const response: ResponsesResponse = { ...opts.shell, status: "failed", error: { code: responseErrorCode(failure), message: failure.message }, output };
    if (usage) response.usage = responsesUsageOf(usage);
    yield stamp({ type: "response.failed", response });
  }

  for await (const event of events) {
    if (event.type === "error") {
      yield* fail(event.error);
      return;
    }
    if (event.type === "usage") {
      usage = event.usage;
      continue;
    }
    if (event.chunk.usage) usage = event.chunk.usage;
    const choice = event.chunk.choices.find((c) => c.index === 0);
    if (!choice || finish !== undefined) continue; // usage-only chunks; nothing is added after the finish
    const delta = choice.delta as { content?: unknown; refusal?: unknown; tool_calls?: unknown };
    if (typeof delta.content === "string" && delta.content !== "") yield* text("output_text", delta.content);
    if (typeof delta.refusal === "string" && delta.refusal !== "") yield* text("refusal", delta.refusal);
    if (Array.isArray(delta.tool_calls)) {
      for (const [position, fragment] of delta.tool_calls.entries()) {
        if (fragment && typeof fragment === "object") yield* toolFragment(fragment as ToolFragment, position);
      }
    }
    if (choice.finish_reason) {
      finish = choice.finish_reason;
      yield* closeAll(endOf(finish).status === "completed" ? "completed" : "incomplete");
    }
  }

  // Usage follows the finish chunk, so the answer is only complete once the source ends.
  if (finish === undefined) {
    yield* fail({ message: ENDED_EARLY, type: "server_error", code: "upstream_error" });
    return;
  }
  const end = endOf(finish);
  if (output.length === 0) {
    // An empty answer is still one (empty) message, as in the non-streamed response.
    yield* text("output_text", "");
    yield* closeMessage(end.status === "completed" ? "completed" : "incomplete");
  }
  const response = finishedResponse(opts.shell, output, end, usage ? responsesUsageOf(usage) : undefined, now());
  yield stamp({ type: end.status === "completed" ? "response.completed" : "response.incomplete", response });
}

/** Nothing can be appended to a complete JSON object: the call is finished. */
function isCompleteJson(text: string | undefined): boolean {
  if (!text) return false;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null;
  } catch {
    return false;
  }
}

function contentOf(part: OpenPart): ResponsesOutputContent {
  return part.kind === "output_text" ? outputText(part.text) : { type: "refusal", refusal: part.text };
}

/** `ResponseError.code` is an enum: a rate limit says so, anything else is the server's failure. */
function responseErrorCode(failure: StreamFailure): "rate_limit_exceeded" | "server_error" {
  return /rate_limit/.test(`${failure.type} ${failure.code ?? ""}`) ? "rate_limit_exceeded" : "server_error";
}
