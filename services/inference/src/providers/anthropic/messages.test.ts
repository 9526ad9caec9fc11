import type { MessagesRequest } from "@gw/contracts";
import { startAnthropicUpstream } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import type { MessagesResult, MessagesStreamEvent } from "../types";
import { failure, upstreamCall, useProviderUpstream } from "../test-context";
import { anthropicMessages, messagesUrl } from "./messages";

const KEY = "sk-ant-server-credential";
const UPSTREAM_MODEL = "claude-sonnet-4-5-20250929";
const PUBLIC_MODEL = "claude-sonnet";

const provider = useProviderUpstream({ name: "anthropic", kind: "anthropic", apiKey: KEY, start: startAnthropicUpstream });

function request(extra: Partial<MessagesRequest> = {}): MessagesRequest {
  return { model: PUBLIC_MODEL, max_tokens: 100, messages: [{ role: "user", content: "Hello Claude" }], ...extra };
}

const models = { publicModel: PUBLIC_MODEL, upstreamModel: UPSTREAM_MODEL };

const send = (req: MessagesRequest, ctx = provider.context(), signal?: AbortSignal) => anthropicMessages(ctx, upstreamCall(req, models, signal));

async function collect(result: MessagesResult): Promise<MessagesStreamEvent[]> {
  if (!result.ok || result.kind !== "stream") throw new Error(`expected a stream, got ${JSON.stringify(result)}`);
  const events: MessagesStreamEvent[] = [];
  for await (const event of result.events) events.push(event);
  return events;
}

/** A hand-written SSE answer, for upstream behaviour the emulator does not produce by itself. */
function sseStep(frames: Array<[string, object]>) {
  const body = frames.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join("");
  return { status: 200, body, headers: { "content-type": "text/event-stream; charset=utf-8" } };
}

const messageStart = {
  type: "message_start",
  message: {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: UPSTREAM_MODEL,
    content: [],
    stop_reason: null,
    usage: { input_tokens: 3, output_tokens: 1 },
  },
};

describe("anthropicMessages: JSON answers", () => {
  it("when a text answer comes back, then it is a validated Message under the public model name with usage", async () => {
    const result = await send(request());
    if (!result.ok || result.kind !== "json") throw new Error("expected a JSON message");
    expect(result.message).toMatchObject({
      type: "message",
      role: "assistant",
      model: PUBLIC_MODEL,
      stop_reason: "end_turn",
      content: [{ type: "text", text: "Echo: Hello Claude" }],
      usage: { input_tokens: 2, output_tokens: 3 },
    });
    expect(JSON.stringify(result.message)).not.toContain(UPSTREAM_MODEL);
    const [seen] = provider.up.requests;
    expect(seen?.path).toBe("/v1/messages");
    expect(seen?.headers["anthropic-version"]).toBe("2023-06-01");
    expect(seen?.headers["content-type"]).toBe("application/json");
    expect(seen?.headers.accept).toBe("application/json");
    expect(seen?.body).toMatchObject({ model: UPSTREAM_MODEL, max_tokens: 100 });
  });

  it("when the model calls a tool, then the tool_use block and stop_reason come through with a parsed input", async () => {
    const tools = [{ name: "get_weather", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
    const result = await send(request({ tools, tool_choice: { type: "tool", name: "get_weather" }, messages: [{ role: "user", content: "Oslo" }] }));
    if (!result.ok || result.kind !== "json") throw new Error("expected a JSON message");
    expect(result.message.stop_reason).toBe("tool_use");
    expect(result.message.content).toEqual([{ type: "tool_use", id: expect.stringMatching(/^toolu_01/), name: "get_weather", input: { city: "Oslo" } }]);
  });

  it("when the upstream answers 200 with something that is not a Message, then it is a retryable upstream_error", async () => {
    provider.up.script({ status: 200, body: { hello: "world" } });
    expect(failure(await send(request()))).toMatchObject({ code: "upstream_error", status: 502, retryable: true });
    provider.up.script({ status: 200, body: "{not json" });
    expect(failure(await send(request()))).toMatchObject({ code: "upstream_error", status: 502, retryable: true });
  });
});

describe("anthropicMessages: streams", () => {
  it("when streamed, then every event is relayed in order, message_start under the public model, ending at message_stop", async () => {
    const events = await collect(await send(request({ stream: true })));
    expect(events.every((e) => e.type === "event")).toBe(true);
    const types = events.map((e) => (e.type === "event" ? e.event.type : e.type));
    expect(types[0]).toBe("message_start");
    expect(types).toContain("ping");
    expect(types.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    const start = events[0];
    expect(start?.type === "event" && start.event.message).toMatchObject({ model: PUBLIC_MODEL, usage: { input_tokens: 2 } });
    expect(JSON.stringify(events)).not.toContain(UPSTREAM_MODEL);
    const text = events
      .flatMap((e) => (e.type === "event" && e.event.type === "content_block_delta" ? [(e.event.delta as { text: string }).text] : []))
      .join("");
    expect(text).toBe("Echo: Hello Claude");
    expect(provider.up.requests[0]?.headers.accept).toBe("text/event-stream");
    expect(provider.up.requests[0]?.body).toMatchObject({ stream: true, model: UPSTREAM_MODEL });
  });

  it("when the upstream sends an error event, then one error event ends the stream with the upstream's type", async () => {
    provider.up.script(
      sseStep([
        ["message_start", messageStart],
        ["error", { type: "error", error: { type: "overloaded_error", message: `Overloaded: ${UPSTREAM_MODEL}` } }],
        ["message_stop", { type: "message_stop" }],
      ]),
    );
    const events = await collect(await send(request({ stream: true })));
    expect(events).toHaveLength(2);
    expect(events[1]).toEqual({ type: "error", error: { type: "overloaded_error", message: `Overloaded: ${PUBLIC_MODEL}`, code: null } });
  });

  it("when the upstream sends an event type we do not know, then it passes through untouched", async () => {
    const novel = { type: "content_block_annotation", index: 0, note: "new in some later API" };
    provider.up.script(
      sseStep([
        ["message_start", messageStart],
        ["content_block_annotation", novel],
        ["ping", { type: "ping" }],
        ["message_stop", { type: "message_stop" }],
      ]),
    );
    const events = await collect(await send(request({ stream: true })));
    expect(events.map((e) => e.type === "event" && e.event.type)).toEqual(["message_start", "content_block_annotation", "ping", "message_stop"]);
    expect(events[1]).toEqual({ type: "event", event: novel });
  });

  it("when the stream is cut before message_stop, then it ends with an error saying so", async () => {
    provider.up.script({ dropAfterChunks: 3 });
    const events = await collect(await send(request({ stream: true })));
    expect(events.slice(0, -1).every((e) => e.type === "event")).toBe(true);
    expect(events.at(-1)).toEqual({
      type: "error",
      error: { type: "api_error", message: "The model provider ended the stream early", code: "upstream_error" },
    });
  });
  it("when the upstream falls silent mid-stream for longer than timeout_ms, then it ends with a timeout error", async () => {
    provider.up.script({ chunkDelayMs: 2_500 }); // undici checks its timeouts every ~0.5 s, so the silence must be long
    const events = await collect(await send(request({ stream: true }), provider.context({ config: { timeout_ms: 100 } })));
    expect(events.at(-1)).toEqual({
      type: "error",
      error: { type: "timeout_error", message: "The model provider stopped answering mid-stream", code: "upstream_timeout" },
    });
  });
});

describe("anthropicMessages: upstream failures", () => {
  it("when the upstream answers 429, then it is a retryable 429 keeping retry-after", async () => {
    provider.up.script({ status: 429, headers: { "retry-after": "7" } });
    const err = failure(await send(request()));
    expect([err.code, err.status, err.retryable]).toEqual(["upstream_rate_limited", 429, true]);
    expect(err.headers).toEqual({ "retry-after": "7" });
    expect(err.message).toContain("rate limit");
  });

  it("when the upstream is overloaded (529), then it is a retryable 503", async () => {
    provider.up.script({ status: 529 });
    const err = failure(await send(request()));
    expect([err.code, err.status, err.retryable]).toEqual(["upstream_unavailable", 503, true]);
  });

  it("when the upstream fails (500), then it is a retryable 502 that does not echo the upstream's text", async () => {
    provider.up.script({ status: 500, body: { type: "error", error: { type: "api_error", message: "shard 17 exploded" } } });
    const err = failure(await send(request()));
    expect([err.code, err.status, err.retryable]).toEqual(["upstream_error", 502, true]);
    expect(err.message).not.toContain("shard 17");
  });

  it("when the upstream rejects the request (400), then its message passes through under the public model name", async () => {
    provider.up.script({
      status: 400,
      body: { type: "error", error: { type: "invalid_request_error", message: `max_tokens: 999999 > 64000, the maximum for ${UPSTREAM_MODEL}` } },
    });
    const err = failure(await send(request()));
    expect([err.code, err.status, err.retryable]).toEqual(["invalid_request", 400, false]);
    expect(err.message).toBe(`max_tokens: 999999 > 64000, the maximum for ${PUBLIC_MODEL}`);
  });

  it("when the upstream refuses the credential (401), then it is a retryable 502, not the caller's auth error", async () => {
    const err = failure(await anthropicMessages(provider.context({ apiKey: "sk-ant-wrong" }), upstreamCall(request(), models)));
    expect([err.code, err.status, err.retryable]).toEqual(["upstream_error", 502, true]);
  });

  it("when the upstream does not answer within timeout_ms, then it is a retryable 504", async () => {
    provider.up.script({ hang: true }); // never answers: undici checks its timers only about once a second
    const err = failure(await send(request(), provider.context({ config: { timeout_ms: 100 } })));
    expect([err.code, err.status, err.retryable]).toEqual(["upstream_timeout", 504, true]);
  });

  it("when the call is aborted, then the upstream request is cancelled", async () => {
    provider.up.script({ hang: true });
    const controller = new AbortController();
    const pending = send(request(), provider.context(), controller.signal);
    await waitFor(() => provider.up.requests.length === 1);
    controller.abort();
    expect((await pending).ok).toBe(false);
    await waitFor(() => provider.up.requests[0]?.aborted === true);
  });
});

describe("anthropicMessages: credentials, headers and API versions", () => {
  it("when configured headers name x-api-key, then the upstream still sees the server's credential only", async () => {
    await send(request(), provider.context({ config: { headers: { "X-Api-Key": "sk-ant-from-config", "anthropic-beta": "tools-2024-04-04" } } }));
    const headers = provider.up.requests[0]?.headers;
    expect(headers?.["x-api-key"]).toBe(KEY);
    expect(headers?.authorization).toBeUndefined();
    expect(headers?.["anthropic-beta"]).toBe("tools-2024-04-04");
  });

  it("when version 2026-10-21 is configured, then temperature, top_p and top_k are not sent and the call succeeds", async () => {
    const ctx = provider.context({ config: { headers: { "Anthropic-Version": "2026-10-21" } } });
    const result = await send(request({ temperature: 0.2, top_p: 0.9, top_k: 40, stop_sequences: ["zzz"] }), ctx);
    expect(result.ok).toBe(true);
    const seen = provider.up.requests[0];
    expect(seen?.headers["anthropic-version"]).toBe("2026-10-21"); // replaced, not sent beside the default
    expect(seen?.body).toMatchObject({ model: UPSTREAM_MODEL, stop_sequences: ["zzz"] });
    for (const param of ["temperature", "top_p", "top_k"]) expect(seen?.body).not.toHaveProperty(param);
  });

  it("when the default version is used, then the sampling parameters pass through", async () => {
    await send(request({ temperature: 0.2, top_p: 0.9, top_k: 40 }));
    expect(provider.up.requests[0]?.body).toMatchObject({ temperature: 0.2, top_p: 0.9, top_k: 40 });
  });

  it("when base_url ends in /v1 or a slash, then /v1 is not doubled", async () => {
    expect(messagesUrl("https://api.anthropic.com")).toBe("https://api.anthropic.com/v1/messages");
    expect(messagesUrl("https://api.anthropic.com/")).toBe("https://api.anthropic.com/v1/messages");
    expect(messagesUrl("https://api.anthropic.com/v1/")).toBe("https://api.anthropic.com/v1/messages");
    expect(messagesUrl("https://proxy.example/anthropic")).toBe("https://proxy.example/anthropic/v1/messages");
    const result = await send(request(), provider.context({ config: { base_url: `${provider.up.url}/v1` } }));
    expect(result.ok).toBe(true);
    expect(provider.up.requests[0]?.path).toBe("/v1/messages");
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}
