import type { ChatCompletion, ChatToolCall, MessagesContentBlock, MessagesResponse, MessagesUsage } from "@gw/contracts";
import { chatUsageOf, finishReasonOf, messagesUsageOf, stopReasonOf, textOf, toolCallsOf } from "./common";
import { toolInputOf } from "./requests";

/**
 * Non-streamed answer translation between Anthropic Messages and OpenAI Chat Completions, both
 * ways. Pure functions; the rules are in README.md beside this file. An answer is never refused:
 * whatever the upstream said that the caller's format cannot carry (thinking, server tool blocks)
 * is left out.
 */

/** Anthropic message → OpenAI chat.completion, as the caller would get it from OpenAI. */
export function messageToChatCompletion(msg: MessagesResponse, publicModel: string, created: number = Math.floor(Date.now() / 1000)): ChatCompletion {
  const texts: string[] = [];
  const toolCalls: ChatToolCall[] = [];
  for (const block of msg.content) {
    if (block.type === "text" && typeof block.text === "string") texts.push(block.text);
    else if (block.type === "tool_use") {
      toolCalls.push({
        id: String(block.id),
        type: "function",
        function: { name: String(block.name), arguments: JSON.stringify(block.input ?? {}) },
      });
    }
  }
  // Text blocks are pieces of one answer (Anthropic splits at citations), so they join with nothing.
  const content = texts.length > 0 ? texts.join("") : toolCalls.length > 0 ? null : "";
  const message: ChatCompletion["choices"][number]["message"] = { role: "assistant", content, refusal: null, annotations: [] };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return {
    id: `chatcmpl-${msg.id.replace(/^msg_/, "")}`,
    object: "chat.completion",
    created,
    model: publicModel,
    // A finished message always has a stop reason; "stop" only covers a malformed upstream answer.
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(msg.stop_reason) ?? "stop" }],
    usage: chatUsageOf(msg.usage),
  };
}

const NO_USAGE: MessagesUsage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

/** OpenAI chat.completion (its first choice) → Anthropic message. */
export function chatCompletionToMessage(c: ChatCompletion, publicModel: string): MessagesResponse {
  const choice = c.choices[0];
  const message: Record<string, unknown> = choice?.message ?? {};
  const content: MessagesContentBlock[] = [];
  const text = textOf(message.content);
  if (text) content.push({ type: "text", text });
  // An OpenAI refusal is what the model said instead of an answer; Anthropic carries it as text.
  if (typeof message.refusal === "string" && message.refusal) content.push({ type: "text", text: message.refusal });
  for (const call of toolCallsOf(message.tool_calls)) {
    content.push({ type: "tool_use", id: call.id, name: call.function.name, input: toolInputOf(call.function.arguments) });
  }
  return {
    id: `msg_${c.id.replace(/^chatcmpl-/, "")}`,
    type: "message",
    role: "assistant",
    model: publicModel,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason),
    stop_sequence: null,
    usage: c.usage ? messagesUsageOf(c.usage) : { ...NO_USAGE },
  };
}
