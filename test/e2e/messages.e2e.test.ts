import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI, type UpstreamEmulator } from "@gw/testkit";
import { startChatMesh, type ChatMesh } from "./chat-mesh";
import type { RunningMesh } from "./harness";

/**
 * Any chat model in either format: `@anthropic-ai/sdk` and `openai` against an Anthropic-kind and an
 * OpenAI-kind upstream, through the four services, with the requests translated where needed.
 */
const OPENAI_KEY = "sk-upstream-openai-messages";
const ANTHROPIC_KEY = "sk-ant-upstream-messages";

let mesh: ChatMesh;
let anthropicUp: UpstreamEmulator;
let gw: RunningMesh;
let key: string;
let origin: string;

const weather = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};

beforeAll(async () => {
  mesh = await startChatMesh({
    workspace: "messages",
    openaiKey: OPENAI_KEY,
    anthropicKey: ANTHROPIC_KEY,
    extraModels: ["claude-off: { type: chat, routes: [{ provider: ant, model: claude-opus-4 }] }"],
  });
  ({ anthropicUp, gw, key } = mesh);
  origin = gw.baseURL.replace(/\/v1$/, "");
}, 180_000);

afterAll(() => mesh?.stop());

const anthropic = () => new Anthropic({ apiKey: key, baseURL: origin, maxRetries: 0 });
const openai = () => new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });

for (const model of ["claude-e2e", "gpt-e2e"]) {
  describe(`when the Anthropic SDK calls ${model} on /v1/messages`, () => {
    it("then a text answer comes back in the Anthropic shape, naming the public model", async () => {
      const msg = await anthropic().messages.create({
        model,
        max_tokens: 100,
        system: "Be brief.",
        messages: [{ role: "user", content: "hello there" }],
      });
      expect(msg).toMatchObject({ type: "message", role: "assistant", model, stop_reason: "end_turn" });
      expect(msg.content[0]).toMatchObject({ type: "text", text: "Echo: hello there" });
      expect(msg.usage.input_tokens).toBeGreaterThan(0);
      expect(msg.usage.output_tokens).toBeGreaterThan(0);
    });

    it("then a stream yields the same text through the SDK's event helpers", async () => {
      const stream = anthropic().messages.stream({ model, max_tokens: 100, messages: [{ role: "user", content: "stream me" }] });
      const texts: string[] = [];
      stream.on("text", (t) => texts.push(t));
      const final = await stream.finalMessage();
      expect(texts.join("")).toBe("Echo: stream me");
      expect(final).toMatchObject({ model, stop_reason: "end_turn" });
      expect(final.usage.output_tokens).toBeGreaterThan(0);
    });

    it("then a forced tool call comes back as a tool_use block with parsed input, streamed or not", async () => {
      const params = {
        model,
        max_tokens: 200,
        tools: [weather],
        tool_choice: { type: "tool" as const, name: "get_weather" },
        messages: [{ role: "user" as const, content: "Paris" }],
      };
      const msg = await anthropic().messages.create(params);
      const call = msg.content.find((b) => b.type === "tool_use");
      expect(msg.stop_reason).toBe("tool_use");
      expect(call).toMatchObject({ type: "tool_use", name: "get_weather" });
      expect(typeof (call as { input: unknown }).input).toBe("object");
      const streamed = await anthropic().messages.stream(params).finalMessage();
      expect(streamed.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "get_weather", input: (call as { input: unknown }).input });
    });
  });
}

describe("when the openai client calls an Anthropic-kind model", () => {
  it("then chat completions, plain and streamed, come back in OpenAI's shape with usage", async () => {
    const completion = await openai().chat.completions.create({
      model: "claude-e2e",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "translate me" },
      ],
    });
    assertOpenAI("CreateChatCompletionResponse", completion);
    expect(completion.choices[0]?.message.content).toBe("Echo: translate me");
    expect(completion.choices[0]?.finish_reason).toBe("stop");
    expect(completion.model).toBe("claude-e2e");
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);

    const stream = await openai().chat.completions.create({
      model: "claude-e2e",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "translate me" },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let finish: string | null | undefined;
    let total = 0;
    for await (const chunk of stream) {
      assertOpenAI("CreateChatCompletionStreamResponse", chunk);
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      total = chunk.usage?.total_tokens ?? total;
    }
    expect(text).toBe("Echo: translate me");
    expect(finish).toBe("stop");
    expect(total).toBe(completion.usage?.total_tokens);
  });

  it("then a tool call round trip works: the call, then the tool's result answered in text", async () => {
    const tools = [{ type: "function" as const, function: { name: weather.name, description: weather.description, parameters: weather.input_schema } }];
    const first = await openai().chat.completions.create({
      model: "claude-e2e",
      messages: [{ role: "user", content: "Paris" }],
      tools,
      tool_choice: { type: "function", function: { name: "get_weather" } },
    });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(first.choices[0]?.finish_reason).toBe("tool_calls");
    expect(call).toMatchObject({ type: "function", function: { name: "get_weather" } });
    const callId = call?.id as string;
    const second = await openai().chat.completions.create({
      model: "claude-e2e",
      tools,
      messages: [
        { role: "user", content: "Paris" },
        { role: "assistant", content: null, tool_calls: first.choices[0]?.message.tool_calls },
        { role: "tool", tool_call_id: callId, content: "sunny" },
      ],
    });
    expect(second.choices[0]?.message.content).toBe("Echo: sunny");
    // The Anthropic upstream saw the result as a tool_result block tied to the same id.
    const seen = anthropicUp.requests.at(-1)?.body as { messages: { role: string; content: unknown }[] };
    expect(JSON.stringify(seen.messages)).toContain(`"tool_use_id":"${callId}"`);
  });

  it("then a parameter Anthropic cannot honour is a 400 naming it, and nothing reaches the upstream", async () => {
    const before = anthropicUp.requests.length;
    await expect(openai().chat.completions.create({ model: "claude-e2e", messages: [{ role: "user", content: "x" }], n: 2 })).rejects.toMatchObject({
      status: 400,
      param: "n",
    });
    expect(anthropicUp.requests.length).toBe(before);
  });
});

describe("when /v1/messages is called badly", () => {
  it("then the Anthropic SDK raises its own typed errors from the Anthropic envelope", async () => {
    await expect(anthropic().messages.create({ model: "claude-e2e", max_tokens: 10, messages: [] as never })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(anthropic().messages.create({ model: "claude-off", max_tokens: 10, messages: [{ role: "user", content: "x" }] })).rejects.toBeInstanceOf(
      Anthropic.PermissionDeniedError,
    );
    await expect(
      new Anthropic({ apiKey: "gw_live_000000000000000000000000000000000000000x", baseURL: origin, maxRetries: 0 }).messages.create({
        model: "claude-e2e",
        max_tokens: 10,
        messages: [{ role: "user", content: "x" }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it("then a Bearer key (the 1.x SDK's style) works too, and the answer carries rate-limit headers", async () => {
    const res = await fetch(`${origin}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "anthropic-version": "2026-10-21", "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-e2e", max_tokens: 20, messages: [{ role: "user", content: "bearer" }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("600");
    expect(res.headers.get("x-gw-usage-tokens")).toBeNull();
    expect(await res.json()).toMatchObject({ content: [{ type: "text", text: "Echo: bearer" }] });
  });

  it("then the SDK's allow-listed beta features reach an Anthropic upstream as anthropic-beta, on the beta path too, and others do not", async () => {
    anthropicUp.reset();
    const msg = await anthropic().beta.messages.create({
      model: "claude-e2e",
      max_tokens: 20,
      betas: ["token-efficient-tools-2025-02-19", "web-fetch-2025-09-10", "context-1m-2025-08-07"],
      messages: [{ role: "user", content: "beta" }],
    });
    expect(msg.content[0]).toMatchObject({ type: "text", text: "Echo: beta" });
    expect(anthropicUp.requests).toHaveLength(1);
    expect(anthropicUp.requests[0]?.headers["anthropic-beta"]).toBe("token-efficient-tools-2025-02-19,context-1m-2025-08-07");
    expect(anthropicUp.requests[0]?.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
  });
});
