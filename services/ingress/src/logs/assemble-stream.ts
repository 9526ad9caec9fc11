import { createParser } from "eventsource-parser";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The events of an SSE text, their data parsed as JSON where it is JSON. */
export function sseEvents(text: string): { event: string | undefined; data: unknown }[] {
  const events: { event: string | undefined; data: unknown }[] = [];
  const parser = createParser({
    onEvent(message) {
      let data: unknown = message.data;
      try {
        data = JSON.parse(message.data);
      } catch {
        // [DONE] and other text stay text.
      }
      events.push({ event: message.event, data });
    },
  });
  parser.feed(text);
  return events;
}

/**
 * A stream's answer as the JSON answer of the same call would have been: OpenAI chat chunks merged
 * into a chat.completion, Anthropic's events into a message, a Responses stream's final response.
 * Undefined for a stream of another kind (its events are kept as text).
 */
export function assembleStream(text: string): unknown {
  const events = sseEvents(text);
  const objects = events.map((e) => e.data).filter(isObject);
  if (objects.some((o) => o.object === "chat.completion.chunk")) return chatCompletion(objects);
  if (objects.some((o) => o.type === "message_start")) return anthropicMessage(objects);
  const completed = objects.find((o) => o.type === "response.completed" && isObject(o.response));
  return completed?.response;
}

interface ChoiceSoFar {
  index: number;
  message: { role: string; content: string | null; tool_calls?: { id?: string; type: string; function: { name: string; arguments: string } }[] };
  finish_reason: unknown;
}

function chatCompletion(chunks: Json[]): Json {
  const choices = new Map<number, ChoiceSoFar>();
  const head: Json = {};
  let usage: unknown;
  for (const chunk of chunks) {
    if (chunk.object !== "chat.completion.chunk") continue;
    for (const field of ["id", "created", "model", "system_fingerprint"])
      if (chunk[field] !== undefined && head[field] === undefined) head[field] = chunk[field];
    if (isObject(chunk.usage)) usage = chunk.usage;
    for (const c of Array.isArray(chunk.choices) ? chunk.choices.filter(isObject) : []) {
      const index = typeof c.index === "number" ? c.index : 0;
      let choice = choices.get(index);
      if (!choice) {
        choice = { index, message: { role: "assistant", content: null }, finish_reason: null };
        choices.set(index, choice);
      }
      const delta = isObject(c.delta) ? c.delta : {};
      if (typeof delta.role === "string") choice.message.role = delta.role;
      if (typeof delta.content === "string") choice.message.content = (choice.message.content ?? "") + delta.content;
      for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls.filter(isObject) : []) {
        choice.message.tool_calls ??= [];
        const calls = choice.message.tool_calls;
        const at = typeof call.index === "number" ? call.index : calls.length;
        calls[at] ??= { type: "function", function: { name: "", arguments: "" } };
        const entry = calls[at];
        const fn = isObject(call.function) ? call.function : {};
        if (typeof call.id === "string") entry.id = call.id;
        if (typeof fn.name === "string") entry.function.name += fn.name;
        if (typeof fn.arguments === "string") entry.function.arguments += fn.arguments;
      }
      if (c.finish_reason !== undefined && c.finish_reason !== null) choice.finish_reason = c.finish_reason;
    }
  }
  return {
    ...head,
    object: "chat.completion",
    choices: [...choices.values()].sort((a, b) => a.index - b.index),
    ...(usage !== undefined ? { usage } : {}),
  };
}

function anthropicMessage(events: Json[]): Json {
  let message: Json = {};
  const content: Json[] = [];
  const partialJson = new Map<number, string>();
  for (const e of events) {
    const index = typeof e.index === "number" ? e.index : 0;
    if (e.type === "message_start" && isObject(e.message)) message = { ...e.message };
    else if (e.type === "content_block_start" && isObject(e.content_block)) content[index] = { ...e.content_block };
    else if (e.type === "content_block_delta" && isObject(e.delta)) {
      content[index] ??= {};
      const block = content[index];
      const d = e.delta;
      if (d.type === "text_delta" && typeof d.text === "string") block.text = String(block.text ?? "") + d.text;
      else if (d.type === "thinking_delta" && typeof d.thinking === "string") block.thinking = String(block.thinking ?? "") + d.thinking;
      else if (d.type === "input_json_delta" && typeof d.partial_json === "string") partialJson.set(index, (partialJson.get(index) ?? "") + d.partial_json);
    } else if (e.type === "message_delta") {
      if (isObject(e.delta)) message = { ...message, ...e.delta };
      if (isObject(e.usage)) message.usage = { ...(isObject(message.usage) ? message.usage : {}), ...e.usage };
    }
  }
  for (const [index, json] of partialJson) {
    const block = content[index];
    if (!block) continue;
    try {
      block.input = JSON.parse(json);
    } catch {
      block.input = json;
    }
  }
  return { ...message, content: content.filter(isObject) };
}
