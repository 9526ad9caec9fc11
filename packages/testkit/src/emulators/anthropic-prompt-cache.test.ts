import Anthropic from "@anthropic-ai/sdk";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicUpstream } from "./anthropic-upstream";
import type { UpstreamEmulator } from "./http-emulator";

const KEY = "sk-ant-cache-key";
let up: UpstreamEmulator;
let client: Anthropic;

beforeAll(async () => {
  // 10 tokens instead of Anthropic's 1024, so prefixes can stay short.
  up = await startAnthropicUpstream({ apiKey: KEY, cacheMinTokens: 10 });
  client = new Anthropic({ baseURL: up.url, apiKey: KEY, maxRetries: 0 });
});
afterEach(() => up.reset());
afterAll(() => up.close());

/** `n` distinct words: n tokens for the emulator. */
const words = (n: number, tag = "w") => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ");

const cachedSystem = (n: number, ttl?: "1h"): Anthropic.TextBlockParam[] => [
  { type: "text", text: words(n), cache_control: ttl ? { type: "ephemeral", ttl } : { type: "ephemeral" } },
];

function ask(params: Partial<Anthropic.MessageCreateParamsNonStreaming> & { messages?: Anthropic.MessageParam[] }) {
  return client.messages.create({ model: "claude-sonnet-4-6", max_tokens: 50, messages: [{ role: "user", content: "two words" }], ...params });
}

/** The usage objects of a raw stream's message_start and message_delta events. */
async function streamUsage(body: object): Promise<{ start: Record<string, unknown>; delta: Record<string, unknown> }> {
  const res = await fetch(`${up.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: "claude-sonnet-4-6", max_tokens: 50, ...body, stream: true }),
  });
  const events = (await res.text())
    .split("\n\n")
    .filter(Boolean)
    .map((frame) => JSON.parse(frame.split("\n")[1]?.slice("data: ".length) ?? "") as Record<string, unknown>);
  const start = events.find((e) => e.type === "message_start")?.message as { usage: Record<string, unknown> };
  const delta = events.find((e) => e.type === "message_delta") as { usage: Record<string, unknown> };
  return { start: start.usage, delta: delta.usage };
}

describe("prompt caching with cache_control breakpoints", () => {
  it("when a cached prefix is sent twice, then the first call writes it, the second reads it, and input_tokens counts only what follows", async () => {
    const first = await ask({ system: cachedSystem(30) });
    expect(first.usage).toMatchObject({
      input_tokens: 2,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 30, ephemeral_1h_input_tokens: 0 },
    });
    const second = await ask({ system: cachedSystem(30), messages: [{ role: "user", content: "a different question" }] });
    expect(second.usage).toMatchObject({
      input_tokens: 3,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 30,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    });
  });

  it("when the answer is streamed, then message_start and message_delta carry the same write, then read, figures", async () => {
    const body = { system: cachedSystem(25), messages: [{ role: "user", content: "stream it" }] };
    const first = await streamUsage(body);
    const written = { input_tokens: 2, cache_creation_input_tokens: 25, cache_read_input_tokens: 0 };
    expect(first.start).toMatchObject({ ...written, cache_creation: { ephemeral_5m_input_tokens: 25, ephemeral_1h_input_tokens: 0 } });
    expect(first.delta).toMatchObject({ ...written, output_tokens: 3 });
    const second = await streamUsage(body);
    const read = { input_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 25 };
    expect(second.start).toMatchObject({ ...read, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 } });
    expect(second.delta).toMatchObject({ ...read, output_tokens: 3 });
  });

  it("when the SDK streams a cached prompt, then finalMessage() reports the read", async () => {
    await ask({ system: cachedSystem(20) });
    const final = await client.messages
      .stream({ model: "claude-sonnet-4-6", max_tokens: 50, system: cachedSystem(20), messages: [{ role: "user", content: "x" }] })
      .finalMessage();
    expect(final.usage).toMatchObject({ input_tokens: 1, cache_read_input_tokens: 20, cache_creation_input_tokens: 0 });
  });

  it("when the breakpoint asks for ttl 1h, then the write is counted as a 1-hour entry", async () => {
    const msg = await ask({ system: cachedSystem(12, "1h") });
    expect(msg.usage).toMatchObject({ cache_creation_input_tokens: 12, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 12 } });
  });

  it("when the prefix changes by one word or the model changes, then it is written again, not read", async () => {
    await ask({ system: cachedSystem(15) });
    const edited = await ask({ system: [{ type: "text", text: `${words(14)} changed`, cache_control: { type: "ephemeral" } }] });
    expect(edited.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 15 });
    const otherModel = await ask({ model: "claude-opus-4-1", system: cachedSystem(15) });
    expect(otherModel.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 15 });
  });

  it("when the breakpoint is on a tool, then the tools alone are the prefix, counted like JSON", async () => {
    const tool: Anthropic.Tool = {
      name: "lookup",
      description: words(20),
      input_schema: { type: "object", properties: { q: { type: "string" } } },
      cache_control: { type: "ephemeral" },
    };
    const { cache_control: _, ...definition } = tool;
    const toolTokens = Math.ceil(JSON.stringify(definition).length / 4);
    const first = await ask({ tools: [tool], tool_choice: { type: "none" } });
    expect(first.usage).toMatchObject({ input_tokens: 2, cache_creation_input_tokens: toolTokens, cache_read_input_tokens: 0 });
    const second = await ask({ tools: [tool], tool_choice: { type: "none" } });
    expect(second.usage).toMatchObject({ input_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: toolTokens });
  });

  it("when a conversation grows with the breakpoint on its last block, then the earlier turn is read and only the new turns are written", async () => {
    const turn1: Anthropic.MessageParam[] = [{ role: "user", content: [{ type: "text", text: words(12, "u"), cache_control: { type: "ephemeral" } }] }];
    const first = await ask({ system: words(8, "s"), messages: turn1 });
    expect(first.usage).toMatchObject({ input_tokens: 0, cache_creation_input_tokens: 20, cache_read_input_tokens: 0 });
    const turn2: Anthropic.MessageParam[] = [
      // The marker moved on: the old block, without it, still matches the cached prefix.
      { role: "user", content: [{ type: "text", text: words(12, "u") }] },
      { role: "assistant", content: "three more words" },
      { role: "user", content: [{ type: "text", text: "and two", cache_control: { type: "ephemeral" } }] },
    ];
    const second = await ask({ system: words(8, "s"), messages: turn2 });
    expect(second.usage).toMatchObject({ input_tokens: 0, cache_read_input_tokens: 20, cache_creation_input_tokens: 5 });
  });

  it("when cache_control is set at the top level, then the last block is the breakpoint (automatic caching)", async () => {
    const body = { system: words(10), messages: [{ role: "user" as const, content: "four words right here" }], cache_control: { type: "ephemeral" as const } };
    expect((await ask(body)).usage).toMatchObject({ input_tokens: 0, cache_creation_input_tokens: 14, cache_read_input_tokens: 0 });
    expect((await ask(body)).usage).toMatchObject({ input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 14 });
  });

  it("when the emulator is reset, then the cache is empty again", async () => {
    await ask({ system: cachedSystem(11) });
    up.reset();
    expect((await ask({ system: cachedSystem(11) })).usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 11 });
  });

  it("when five blocks carry cache_control, then the API's 400 comes back", async () => {
    const marked = Array.from({ length: 5 }, (_, i): Anthropic.TextBlockParam => ({ type: "text", text: `b${i}`, cache_control: { type: "ephemeral" } }));
    const err = await ask({ system: marked }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    if (err instanceof Anthropic.APIError) {
      expect(err.error).toMatchObject({
        error: { type: "invalid_request_error", message: "A maximum of 4 blocks with cache_control may be provided. Found 5." },
      });
    }
  });
});

describe("the minimum cacheable prefix", () => {
  it("when the prefix is shorter than the minimum, then nothing is cached and every token is input", async () => {
    const short = await ask({ system: cachedSystem(9) });
    expect(short.usage).toMatchObject({ input_tokens: 11, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    const again = await ask({ system: cachedSystem(9) });
    expect(again.usage).toMatchObject({ input_tokens: 11, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });

  it("when no minimum is configured, then Anthropic's per-model minimum applies (1024 for Sonnet 4.6, 2048 for Haiku 3.5)", async () => {
    const real = await startAnthropicUpstream({ apiKey: KEY });
    try {
      const sdk = new Anthropic({ baseURL: real.url, apiKey: KEY, maxRetries: 0 });
      const call = (model: string, n: number) =>
        sdk.messages.create({ model, max_tokens: 10, system: cachedSystem(n), messages: [{ role: "user", content: "hi" }] });
      expect((await call("claude-sonnet-4-6", 1023)).usage).toMatchObject({ input_tokens: 1024, cache_creation_input_tokens: 0 });
      expect((await call("claude-sonnet-4-6", 1024)).usage).toMatchObject({ input_tokens: 1, cache_creation_input_tokens: 1024 });
      expect((await call("claude-3-5-haiku-20241022", 1500)).usage).toMatchObject({ input_tokens: 1501, cache_creation_input_tokens: 0 });
      expect((await call("claude-3-5-haiku-20241022", 2048)).usage).toMatchObject({ input_tokens: 1, cache_creation_input_tokens: 2048 });
    } finally {
      await real.close();
    }
  });
});
