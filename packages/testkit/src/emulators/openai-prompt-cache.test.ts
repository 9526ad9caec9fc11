import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI } from "../openapi/validate";
import type { UpstreamEmulator } from "./http-emulator";
import { startOpenAIUpstream } from "./openai-upstream";

const KEY = "sk-test-cache-123456";
let up: UpstreamEmulator;
let client: OpenAI;

beforeAll(async () => {
  up = await startOpenAIUpstream({ apiKey: KEY });
  client = new OpenAI({ baseURL: up.url, apiKey: KEY, maxRetries: 0 });
});
afterEach(() => up.reset());
afterAll(() => up.close());

/** `n` distinct words: n tokens for the emulator. */
const words = (n: number, tag = "w") => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ");

const withSystem = (system: string, question: string): OpenAI.ChatCompletionMessageParam[] => [
  { role: "system", content: system },
  { role: "user", content: question },
];

describe("automatic prompt caching", () => {
  it("when a long prefix is repeated, then cached_tokens is its length rounded down to 128 and prompt_tokens still counts everything", async () => {
    const system = words(1100);
    const first = await client.chat.completions.create({ model: "gpt-4o-mini", messages: withSystem(system, "first question") });
    assertOpenAI("CreateChatCompletionResponse", first);
    expect(first.usage).toMatchObject({ prompt_tokens: 1102, prompt_tokens_details: { cached_tokens: 0 } });
    const second = await client.chat.completions.create({ model: "gpt-4o-mini", messages: withSystem(system, "another question here") });
    assertOpenAI("CreateChatCompletionResponse", second);
    expect(second.usage).toMatchObject({ prompt_tokens: 1103, prompt_tokens_details: { cached_tokens: 1024 } });
    expect(second.usage?.total_tokens).toBe(1103 + (second.usage?.completion_tokens ?? 0));
  });

  it("when the whole conversation is sent again with a new turn, then the longest seen prefix is the hit", async () => {
    const history = withSystem(words(1200), words(200, "q"));
    await client.chat.completions.create({ model: "gpt-4o", messages: history });
    const next = await client.chat.completions.create({
      model: "gpt-4o",
      messages: [...history, { role: "assistant", content: "an answer" }, { role: "user", content: "more" }],
    });
    // 1400 tokens seen before → 1408 is not reached, 1280 is the last whole 128-token step.
    expect(next.usage?.prompt_tokens_details?.cached_tokens).toBe(1280);
  });

  it("when the prompt is under 1024 tokens, then nothing is cached even when repeated", async () => {
    const messages = withSystem(words(1000), "same question");
    await client.chat.completions.create({ model: "gpt-4o-mini", messages });
    const again = await client.chat.completions.create({ model: "gpt-4o-mini", messages });
    expect(again.usage).toMatchObject({ prompt_tokens: 1002, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it("when the model or the tools differ, then the earlier prefix does not match", async () => {
    const messages = withSystem(words(1100), "question");
    await client.chat.completions.create({ model: "gpt-4o-mini", messages });
    const otherModel = await client.chat.completions.create({ model: "gpt-4o", messages });
    expect(otherModel.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    const tool: OpenAI.ChatCompletionTool = { type: "function", function: { name: "f", parameters: { type: "object", properties: {} } } };
    const withTools = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools: [tool], tool_choice: "none" });
    expect(withTools.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
  });

  it("when streamed with include_usage, then the usage chunk carries the cached tokens", async () => {
    const messages = withSystem(words(1300), "stream please");
    await client.chat.completions.create({ model: "gpt-4o-mini", messages });
    const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      assertOpenAI("CreateChatCompletionStreamResponse", chunk);
      usage = chunk.usage ?? usage;
    }
    expect(usage).toMatchObject({ prompt_tokens: 1302, prompt_tokens_details: { cached_tokens: 1280 } });
  });

  it("when the emulator is reset, then the cache is empty again", async () => {
    const messages = withSystem(words(1100), "q");
    await client.chat.completions.create({ model: "gpt-4o-mini", messages });
    up.reset();
    const after = await client.chat.completions.create({ model: "gpt-4o-mini", messages });
    expect(after.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
  });

  it("when cacheMinTokens lowers the minimum, then short prompts are cached, still in 128-token steps", async () => {
    const small = await startOpenAIUpstream({ cacheMinTokens: 128 });
    try {
      const sdk = new OpenAI({ baseURL: small.url, apiKey: "unused", maxRetries: 0 });
      const ask = (question: string) => sdk.chat.completions.create({ model: "gpt-4o-mini", messages: withSystem(words(300), question) });
      await ask("one");
      const hit = await ask("two");
      expect(hit.usage?.prompt_tokens_details?.cached_tokens).toBe(256);
      expect((hit.usage?.prompt_tokens_details?.cached_tokens ?? 1) % 128).toBe(0);
    } finally {
      await small.close();
    }
  });
});

describe("reasoning tokens", () => {
  const question: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "think about this" }];
  // "Echo: think about this": four visible tokens.
  const visible = 4;

  it("when a reasoning model answers, then reasoning_tokens are reported and included in completion_tokens", async () => {
    const res = await client.chat.completions.create({ model: "o3-mini", messages: question });
    assertOpenAI("CreateChatCompletionResponse", res);
    expect(res.choices[0]?.message.content).toBe("Echo: think about this");
    const reasoning = res.usage?.completion_tokens_details?.reasoning_tokens ?? 0;
    expect(reasoning).toBeGreaterThan(0);
    expect(res.usage).toMatchObject({ completion_tokens: visible + reasoning, total_tokens: 3 + visible + reasoning });
  });

  it("when reasoning_effort is sent, then more effort means more reasoning tokens, and none means none", async () => {
    const tokens = async (model: string, effort?: OpenAI.ReasoningEffort) => {
      const res = await client.chat.completions.create({ model, messages: question, ...(effort ? { reasoning_effort: effort } : {}) });
      expect(res.usage?.completion_tokens).toBe(visible + (res.usage?.completion_tokens_details?.reasoning_tokens ?? 0));
      return res.usage?.completion_tokens_details?.reasoning_tokens;
    };
    const low = await tokens("gpt-5-mini", "low");
    const high = await tokens("gpt-5-mini", "high");
    expect(low).toBeGreaterThan(0);
    expect(high).toBeGreaterThan(low ?? 0);
    expect(await tokens("gpt-4o", "medium")).toBeGreaterThan(0);
    expect(await tokens("gpt-5-mini", "none")).toBe(0);
    expect(await tokens("gpt-4o")).toBe(0);
  });

  it("when max_completion_tokens is spent on reasoning, then the visible text is cut and finish_reason is length", async () => {
    const full = await client.chat.completions.create({ model: "o4-mini", messages: question });
    const reasoning = full.usage?.completion_tokens_details?.reasoning_tokens ?? 0;
    const cut = await client.chat.completions.create({ model: "o4-mini", messages: question, max_completion_tokens: reasoning + 2 });
    expect(cut.choices[0]).toMatchObject({ message: { content: "Echo: think" }, finish_reason: "length" });
    expect(cut.usage).toMatchObject({ completion_tokens: reasoning + 2, completion_tokens_details: { reasoning_tokens: reasoning } });
    const none = await client.chat.completions.create({ model: "o4-mini", messages: question, max_completion_tokens: reasoning });
    expect(none.choices[0]).toMatchObject({ message: { content: "" }, finish_reason: "length" });
  });

  it("when a reasoning model streams with include_usage and n=2, then the usage chunk counts both choices' reasoning", async () => {
    const single = await client.chat.completions.create({ model: "o1", messages: question });
    const perChoice = single.usage?.completion_tokens_details?.reasoning_tokens ?? 0;
    const stream = await client.chat.completions.create({ model: "o1", messages: question, n: 2, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage).toMatchObject({ completion_tokens: 2 * (visible + perChoice), completion_tokens_details: { reasoning_tokens: 2 * perChoice } });
  });
});
