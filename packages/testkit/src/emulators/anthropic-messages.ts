import { applyStop, countTokens, fragments, isRecord, jsonTokens, limitTokens, pieces, randomId, valueForSchema } from "./synthetic";
import type { JsonObject } from "./synthetic";

/**
 * Messages API answers (provider-wire-formats.md §4.3/§4.4).
 *
 * Text is `Echo: <text of the last user turn>` (its text blocks and tool_result contents). Tool use
 * follows Anthropic's tool_choice: `none` → text only; `tool` → that tool; `any` → the first tool
 * (the first two unless `disable_parallel_tool_use`); `auto`/absent → a text block then the tool
 * call(s), except after a tool_result turn, where Claude answers in text. With `any`/`tool` there is
 * no text before the tool_use block, because the API prefills the turn to force the tool.
 */

type Block = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: unknown; json: string };

export interface MessagePlan {
  model: string;
  blocks: Block[];
  stopReason: "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";
  stopSequence: string | null;
  inputTokens: number;
  outputTokens: number;
}

/** Text of a content value: a string, or blocks (text, and tool_result content, nested). */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts: string[] = [];
  for (const block of content) {
    if (!isRecord(block)) continue;
    if (block.type === "text" && typeof block.text === "string") parts.push(block.text);
    if (block.type === "tool_result") parts.push(contentText(block.content));
  }
  return parts.filter(Boolean).join(" ");
}

function customTools(tools: unknown): JsonObject[] {
  if (!Array.isArray(tools)) return [];
  // Server tools (web_search_…, code_execution_…) carry a versioned `type` and no input_schema.
  return tools.filter((t): t is JsonObject => isRecord(t) && typeof t.name === "string" && (t.type === undefined || t.type === "custom"));
}

function endsWithToolResult(message: JsonObject | undefined): boolean {
  return Array.isArray(message?.content) && message.content.some((b) => isRecord(b) && b.type === "tool_result");
}

export function planMessage(body: JsonObject): MessagePlan {
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const text = lastUser ? contentText(lastUser.content) : "";
  const inputTokens = Math.max(1, countTokens(contentText(body.system)) + messages.reduce((n, m) => n + countTokens(contentText(m.content)), 0));
  const model = typeof body.model === "string" ? body.model : "";
  const tools = customTools(body.tools);
  const choice = isRecord(body.tool_choice) ? body.tool_choice : { type: "auto" };
  const parallel = choice.disable_parallel_tool_use !== true;

  let called: JsonObject[] = [];
  if (tools.length > 0 && choice.type !== "none") {
    if (choice.type === "tool") {
      called = [tools.find((t) => t.name === choice.name) ?? { name: choice.name }];
    } else if (choice.type === "any" || !endsWithToolResult(messages.at(-1))) {
      called = tools.slice(0, parallel ? 2 : 1);
    }
  }
  if (called.length > 0) {
    const blocks: Block[] = [];
    if (choice.type !== "any" && choice.type !== "tool") blocks.push({ type: "text", text: `Echo: ${text}` });
    for (const tool of called) {
      const input = valueForSchema(tool.input_schema, text);
      blocks.push({ type: "tool_use", id: `toolu_01${randomId(22)}`, name: String(tool.name), input, json: JSON.stringify(input) });
    }
    return { model, blocks, stopReason: "tool_use", stopSequence: null, inputTokens, outputTokens: outputTokens(blocks) };
  }

  const stops = Array.isArray(body.stop_sequences) ? body.stop_sequences.filter((s): s is string => typeof s === "string") : [];
  const stopped = applyStop(`Echo: ${text}`, stops);
  const limited = limitTokens(stopped.text, typeof body.max_tokens === "number" ? body.max_tokens : undefined);
  const blocks: Block[] = [{ type: "text", text: limited.text }];
  const stopReason = limited.truncated ? "max_tokens" : stopped.stop !== null ? "stop_sequence" : "end_turn";
  const stopSequence = stopReason === "stop_sequence" ? stopped.stop : null;
  return { model, blocks, stopReason, stopSequence, inputTokens, outputTokens: outputTokens(blocks) };
}

function outputTokens(blocks: Block[]): number {
  return Math.max(
    1,
    blocks.reduce((n, b) => n + (b.type === "text" ? countTokens(b.text) : jsonTokens(b.json)), 0),
  );
}

function usage(plan: MessagePlan, outputTokensValue: number): JsonObject {
  return {
    input_tokens: plan.inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: outputTokensValue,
    server_tool_use: null,
    service_tier: "standard",
    inference_geo: "not_available",
  };
}

function blockBody(b: Block): JsonObject {
  return b.type === "text" ? { type: "text", text: b.text, citations: null } : { type: "tool_use", id: b.id, name: b.name, input: b.input };
}

export function message(plan: MessagePlan, id: string): JsonObject {
  return {
    id,
    type: "message",
    role: "assistant",
    model: plan.model,
    content: plan.blocks.map(blockBody),
    stop_reason: plan.stopReason,
    stop_sequence: plan.stopSequence,
    stop_details: null,
    container: null,
    usage: usage(plan, plan.outputTokens),
  };
}

const frame = (data: JsonObject) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

/** Named SSE events (`event:` before every `data:`; the SDK skips events without one). */
export function messageFrames(plan: MessagePlan, id: string): string[] {
  const frames: string[] = [];
  const start = message(plan, id);
  frames.push(
    frame({
      type: "message_start",
      message: { ...start, content: [], stop_reason: null, stop_sequence: null, usage: usage(plan, 1) },
    }),
  );
  plan.blocks.forEach((b, index) => {
    const contentBlock = b.type === "text" ? { type: "text", text: "" } : { type: "tool_use", id: b.id, name: b.name, input: {} };
    frames.push(frame({ type: "content_block_start", index, content_block: contentBlock }));
    if (index === 0) frames.push(frame({ type: "ping" })); // the API pings right after the first block opens
    const deltas =
      b.type === "text"
        ? pieces(b.text).map((t) => ({ type: "text_delta", text: t }))
        : ["", ...fragments(b.json)].map((p) => ({ type: "input_json_delta", partial_json: p }));
    for (const delta of deltas) frames.push(frame({ type: "content_block_delta", index, delta }));
    frames.push(frame({ type: "content_block_stop", index }));
  });
  frames.push(
    frame({
      type: "message_delta",
      delta: { stop_reason: plan.stopReason, stop_sequence: plan.stopSequence },
      // Cumulative counts for the whole message, as the API sends them.
      usage: {
        input_tokens: plan.inputTokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: plan.outputTokens,
      },
    }),
  );
  frames.push(frame({ type: "message_stop" }));
  return frames;
}
