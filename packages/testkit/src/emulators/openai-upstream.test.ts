import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI } from "../openapi/validate";
import { startOpenAIUpstream } from "./openai-upstream";
import type { UpstreamEmulator } from "./http-emulator";

let up: UpstreamEmulator;
let client: OpenAI;

beforeAll(async () => {
  up = await startOpenAIUpstream({ apiKey: "sk-test-key-123456" });
  client = new OpenAI({ baseURL: up.url, apiKey: "sk-test-key-123456", maxRetries: 0 });
});
afterEach(() => up.reset());
afterAll(() => up.close());

const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const timeTool = {
  type: "function" as const,
  function: {
    name: "get_time",
    parameters: { type: "object", properties: { zone: { type: "string", enum: ["UTC", "CET"] } } },
  },
};

async function waitFor(check: () => boolean, ms = 2000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("chat completions", () => {
  it("when a chat completion is requested, then it echoes the last user message in a spec-valid chat.completion", async () => {
    const res = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "Be brief" },
        { role: "user", content: "Hello there" },
      ],
    });
    assertOpenAI("CreateChatCompletionResponse", res);
    expect(res.model).toBe("gpt-4o-mini");
    expect(res.choices[0]?.message).toMatchObject({ role: "assistant", content: "Echo: Hello there", refusal: null });
    expect(res.choices[0]?.finish_reason).toBe("stop");
    expect(res.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 });
    const [req] = up.requests;
    expect(req).toMatchObject({ method: "POST", path: "/v1/chat/completions", aborted: false, status: 200 });
    expect(req?.headers.authorization).toBe("Bearer sk-test-key-123456");
    expect(req?.body).toMatchObject({ model: "gpt-4o-mini" });
  });

  it("when max_tokens is smaller than the answer, then it is cut and finish_reason is length", async () => {
    const res = await client.chat.completions.create({
      model: "gpt-4o",
      max_tokens: 2,
      messages: [{ role: "user", content: "one two three" }],
    });
    assertOpenAI("CreateChatCompletionResponse", res);
    expect(res.choices[0]?.message.content).toBe("Echo: one");
    expect(res.choices[0]?.finish_reason).toBe("length");
  });

  it("when streaming with include_usage, then role, content pieces, finish, a choices-less usage chunk and usage:null elsewhere", async () => {
    const stream = await client.chat.completions.create({
      model: "gpt-4o-mini",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "stream me please" }],
    });
    const chunks = [];
    for await (const chunk of stream) {
      assertOpenAI("CreateChatCompletionStreamResponse", chunk);
      chunks.push(chunk);
    }
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: "assistant", content: "" });
    const contents = chunks
      .slice(1)
      .map((c) => c.choices[0]?.delta.content)
      .filter((c) => typeof c === "string");
    expect(contents.length).toBeGreaterThan(2);
    expect(contents.join("")).toBe("Echo: stream me please");
    const finish = chunks.at(-2);
    expect(finish?.choices[0]).toMatchObject({ delta: {}, finish_reason: "stop" });
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull();
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  it("when streaming without include_usage, then no chunk has a usage key and the stream ends with [DONE]", async () => {
    const res = await fetch(`${up.url}/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test-key-123456", "content-type": "application/json" },
      body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const frames = (await res.text()).split("\n\n").filter(Boolean);
    expect(frames.every((f) => f.startsWith("data: "))).toBe(true);
    expect(frames.at(-1)).toBe("data: [DONE]");
    for (const f of frames.slice(0, -1)) {
      const chunk: unknown = JSON.parse(f.slice(6));
      assertOpenAI("CreateChatCompletionStreamResponse", chunk);
      expect(chunk).not.toHaveProperty("usage");
    }
  });
});

describe("tool calls", () => {
  it("when a tool is offered, then the answer is a call to it with schema-shaped arguments from the user text", async () => {
    const res = await client.chat.completions.create({
      model: "gpt-4o",
      tools: [weatherTool],
      messages: [{ role: "user", content: "Paris" }],
    });
    assertOpenAI("CreateChatCompletionResponse", res);
    const choice = res.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice?.message.content).toBeNull();
    const call = choice?.message.tool_calls?.[0];
    expect(call?.type).toBe("function");
    expect(call?.id).toMatch(/^call_/);
    if (call?.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
  });

  it("when two tools are offered, then both are called in parallel unless parallel_tool_calls is false", async () => {
    const messages = [{ role: "user" as const, content: "Berlin" }];
    const both = await client.chat.completions.create({ model: "m", tools: [weatherTool, timeTool], messages });
    expect(both.choices[0]?.message.tool_calls?.map((c) => (c.type === "function" ? c.function.name : ""))).toEqual(["get_weather", "get_time"]);
    const one = await client.chat.completions.create({ model: "m", tools: [weatherTool, timeTool], parallel_tool_calls: false, messages });
    expect(one.choices[0]?.message.tool_calls).toHaveLength(1);
  });

  it("when tool_choice names a tool, then only that tool is called; when it is none, then text comes back", async () => {
    const messages = [{ role: "user" as const, content: "now" }];
    const named = await client.chat.completions.create({
      model: "m",
      tools: [weatherTool, timeTool],
      tool_choice: { type: "function", function: { name: "get_time" } },
      messages,
    });
    const calls = named.choices[0]?.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    if (calls[0]?.type !== "function") throw new Error("expected a function call");
    expect(JSON.parse(calls[0].function.arguments)).toEqual({ zone: "UTC" });
    const none = await client.chat.completions.create({ model: "m", tools: [weatherTool], tool_choice: "none", messages });
    expect(none.choices[0]?.message.content).toBe("Echo: now");
  });

  it("when the last message is a tool result, then the model answers in text", async () => {
    const res = await client.chat.completions.create({
      model: "m",
      tools: [weatherTool],
      messages: [
        { role: "user", content: "Paris" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
      ],
    });
    expect(res.choices[0]).toMatchObject({ finish_reason: "stop", message: { content: "Echo: sunny" } });
  });

  it("when tool calls are streamed, then fragments follow the wire sequence and the SDK helper assembles parseable arguments", async () => {
    const stream = client.chat.completions.stream({
      model: "gpt-4o",
      tools: [weatherTool, timeTool],
      messages: [{ role: "user", content: "Rome" }],
    });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    stream.on("chunk", (chunk) => chunks.push(chunk));
    const final = await stream.finalChatCompletion();
    for (const c of chunks) assertOpenAI("CreateChatCompletionStreamResponse", c);

    const calls = final.choices[0]?.message.tool_calls ?? [];
    expect(final.choices[0]?.finish_reason).toBe("tool_calls");
    expect(calls.map((c) => (c.type === "function" ? JSON.parse(c.function.arguments) : null))).toEqual([{ city: "Rome" }, { zone: "UTC" }]);

    const first = chunks[0]?.choices[0]?.delta;
    expect(first).toMatchObject({ role: "assistant", content: null });
    expect(first?.tool_calls?.[0]).toMatchObject({ index: 0, type: "function", function: { name: "get_weather", arguments: "" } });
    const argumentPieces = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).filter((t) => t.id === undefined);
    expect(argumentPieces.length).toBeGreaterThan(2);
    for (const piece of argumentPieces) expect(Object.keys(piece).sort()).toEqual(["function", "index"]);
    expect(chunks.at(-1)?.choices[0]).toMatchObject({ delta: {}, finish_reason: "tool_calls" });
  });
});

describe("embeddings, models and legacy completions", () => {
  it("when the SDK asks for embeddings (base64 by default), then it decodes the same floats the float encoding returns", async () => {
    const viaSdk = await client.embeddings.create({ model: "text-embedding-3-small", input: ["alpha", "beta"] });
    expect(up.requests[0]?.body).toMatchObject({ encoding_format: "base64" });
    assertOpenAI("CreateEmbeddingResponse", viaSdk);
    const asFloat = await client.embeddings.create({ model: "text-embedding-3-small", input: ["alpha", "beta"], encoding_format: "float" });
    assertOpenAI("CreateEmbeddingResponse", asFloat);
    expect(viaSdk.data).toHaveLength(2);
    expect(viaSdk.data[0]?.embedding).toHaveLength(1536);
    expect(viaSdk.data[0]?.embedding).toEqual(asFloat.data[0]?.embedding);
    expect(viaSdk.data[0]?.embedding).not.toEqual(viaSdk.data[1]?.embedding);
    const norm = Math.hypot(...(asFloat.data[1]?.embedding ?? []));
    expect(norm).toBeCloseTo(1, 5);
    expect(asFloat.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 });
  });

  it("when dimensions asks for more than the model's own length, then it is a 400 naming dimensions, as OpenAI answers", async () => {
    const err = await client.embeddings.create({ model: "text-embedding-3-small", input: "x", dimensions: 10_000_000_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("dimensions");
  });

  it("when dimensions is given, then vectors have that length", async () => {
    const res = await client.embeddings.create({ model: "text-embedding-3-large", input: "x", dimensions: 256 });
    expect(res.data[0]?.embedding).toHaveLength(256);
  });

  it("when models are listed, then the body is a spec-valid list", async () => {
    const res = await fetch(`${up.url}/models`, { headers: { authorization: "Bearer sk-test-key-123456" } });
    const body: unknown = await res.json();
    assertOpenAI("ListModelsResponse", body);
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toContain("gpt-4o-mini");
  });

  it("when a legacy completion is requested, then it echoes the prompt and honours max_tokens", async () => {
    const res = await client.completions.create({ model: "gpt-3.5-turbo-instruct", prompt: "Say this is a test" });
    assertOpenAI("CreateCompletionResponse", res);
    expect(res.choices[0]).toMatchObject({ text: "Echo: Say this is a test", finish_reason: "stop" });
    const short = await client.completions.create({ model: "gpt-3.5-turbo-instruct", prompt: "a b c", max_tokens: 2 });
    expect(short.choices[0]).toMatchObject({ text: "Echo: a", finish_reason: "length" });
  });

  it("when a legacy completion is streamed with include_usage, then pieces, a finish chunk and a usage chunk arrive", async () => {
    const stream = await client.completions.create({
      model: "gpt-3.5-turbo-instruct",
      prompt: "hello world",
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    for (const c of chunks) {
      // The spec streams finish_reason:null and usage:null in its own example, but its schema allows neither.
      const strictShape = {
        ...c,
        usage: c.usage ?? undefined,
        choices: c.choices.map((ch) => ({ ...ch, finish_reason: ch.finish_reason ?? "stop" })),
      };
      assertOpenAI("CreateCompletionResponse", JSON.parse(JSON.stringify(strictShape)));
    }
    expect(chunks.map((c) => c.choices[0]?.text ?? "").join("")).toBe("Echo: hello world");
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
  });
});

describe("errors and scripted failures", () => {
  it("when a 429 with retry-after is scripted and retries are off, then the SDK raises RateLimitError with that header", async () => {
    up.script({ status: 429, headers: { "retry-after": "7" } });
    const err = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    if (!(err instanceof OpenAI.RateLimitError)) return;
    expect(err.headers.get("retry-after")).toBe("7");
    expect(err.code).toBe("rate_limit_exceeded");
    assertOpenAI("ErrorResponse", { error: err.error });
    const next = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
    expect(next.choices[0]?.message.content).toBe("Echo: hi");
  });

  it("when the client retries a scripted 503, then the second attempt succeeds", async () => {
    up.script({ status: 503, headers: { "retry-after-ms": "5" } });
    const retrying = new OpenAI({ baseURL: up.url, apiKey: "sk-test-key-123456", maxRetries: 1 });
    const res = await retrying.chat.completions.create({ model: "m", messages: [{ role: "user", content: "again" }] });
    expect(res.choices[0]?.message.content).toBe("Echo: again");
    expect(up.requests.map((r) => r.status)).toEqual([503, 200]);
  });

  it("when the API key is wrong or missing, then OpenAI's 401 envelope comes back", async () => {
    const wrong = new OpenAI({ baseURL: up.url, apiKey: "sk-wrong-key-abcdef", maxRetries: 0 });
    const err = await wrong.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    if (err instanceof OpenAI.AuthenticationError) {
      expect(err.code).toBe("invalid_api_key");
      expect(err.message).toContain("sk-wrong*******cdef");
    }
    const res = await fetch(`${up.url}/models`);
    expect(res.status).toBe(401);
    const body: unknown = await res.json();
    assertOpenAI("ErrorResponse", body);
    expect(JSON.stringify(body)).toContain("You didn't provide an API key");
  });

  it("when an unknown route is called, then a 404 Invalid URL error is returned", async () => {
    const res = await fetch(`${up.url}/nope`, { method: "POST", headers: { authorization: "Bearer sk-test-key-123456" } });
    expect(res.status).toBe(404);
    const body: unknown = await res.json();
    assertOpenAI("ErrorResponse", body);
    expect(body).toMatchObject({ error: { message: "Invalid URL (POST /v1/nope)" } });
  });

  it("when a body is scripted, then it is returned verbatim", async () => {
    up.script({ status: 200, body: { custom: true } });
    const res = await fetch(`${up.url}/models`, { headers: { authorization: "Bearer sk-test-key-123456" } });
    expect(await res.json()).toEqual({ custom: true });
  });

  it("when a streaming request is cut after 3 chunks, then the client sees an error and nothing is marked aborted", async () => {
    up.script({ dropAfterChunks: 3 });
    const stream = await client.chat.completions.create({
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "a b c d e f g" }],
    });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const c of stream) seen.push(c.choices[0]?.delta.content ?? "");
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(seen.join("")).toBe("Echo: a");
    expect(up.requests[0]).toMatchObject({ chunksWritten: 3, aborted: false });
  });

  it("when a JSON answer is dropped before or during the body, then the client sees a connection failure", async () => {
    up.script({ dropAfterChunks: 0 }, { dropAfterChunks: 1 });
    const ask = () => client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e);
    expect(await ask()).toBeInstanceOf(OpenAI.APIConnectionError);
    // Headers arrived, so the SDK does not wrap the failure: undici's "terminated" surfaces as is.
    expect(await ask()).toMatchObject({ name: "TypeError", message: "terminated" });
    expect(up.requests.map((r) => [r.status, r.aborted])).toEqual([
      [undefined, false],
      [200, false],
    ]);
  });

  it("when a request hangs, then the client times out and the request is recorded as aborted", async () => {
    up.script({ hang: true });
    const impatient = new OpenAI({ baseURL: up.url, apiKey: "sk-test-key-123456", maxRetries: 0, timeout: 150 });
    const err = await impatient.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    await waitFor(() => up.requests[0]?.aborted === true);
    expect(up.requests[0]?.status).toBeUndefined();
  });

  it("when the client aborts a stream, then the emulator records it and stops writing", async () => {
    up.script({ chunkDelayMs: 25 });
    const stream = await client.chat.completions.create({
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "one two three four five six seven eight nine ten" }],
    });
    for await (const _chunk of stream) {
      stream.controller.abort();
      break;
    }
    await waitFor(() => up.requests[0]?.aborted === true);
    const written = up.requests[0]?.chunksWritten ?? 0;
    await new Promise((r) => setTimeout(r, 100));
    expect(up.requests[0]?.chunksWritten).toBe(written);
    expect(written).toBeLessThan(14);
  });

  it("when delayMs is scripted, then the answer arrives no sooner", async () => {
    up.script({ delayMs: 120 });
    const started = Date.now();
    await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "slow" }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
  });
});
