import Anthropic from "@anthropic-ai/sdk";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicUpstream } from "./anthropic-upstream";
import type { UpstreamEmulator } from "./http-emulator";

const KEY = "sk-ant-test-key";
let up: UpstreamEmulator;
let client: Anthropic;

beforeAll(async () => {
  up = await startAnthropicUpstream({ apiKey: KEY });
  client = new Anthropic({ baseURL: up.url, apiKey: KEY, maxRetries: 0 });
});
afterEach(() => up.reset());
afterAll(() => up.close());

const weather: Anthropic.Tool = {
  name: "get_weather",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const clock: Anthropic.Tool = { name: "get_time", input_schema: { type: "object", properties: {} } };

/** Raw SSE of a streamed request, as [event, data] pairs. */
async function rawStream(body: object, headers: Record<string, string> = {}): Promise<Array<[string, Record<string, unknown>]>> {
  const res = await fetch(`${up.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json", ...headers },
    body: JSON.stringify({ ...body, stream: true }),
  });
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  return (await res.text())
    .split("\n\n")
    .filter(Boolean)
    .map((frame) => {
      const [eventLine, dataLine, ...rest] = frame.split("\n");
      expect(rest).toEqual([]);
      expect(eventLine).toMatch(/^event: /);
      expect(dataLine).toMatch(/^data: /);
      const data = JSON.parse(dataLine?.slice(6) ?? "") as Record<string, unknown>;
      expect(data.type).toBe(eventLine?.slice(7)); // the data's type always repeats the event name
      return [eventLine?.slice(7) ?? "", data];
    });
}

describe("messages", () => {
  it("when a message is created, then it echoes the last user turn in a Message with usage", async () => {
    const msg = await client.messages.create({
      model: "claude-test-model",
      max_tokens: 100,
      system: "Be brief",
      messages: [{ role: "user", content: "Hello Claude" }],
    });
    expect(msg).toMatchObject({
      type: "message",
      role: "assistant",
      model: "claude-test-model",
      stop_reason: "end_turn",
      stop_sequence: null,
      content: [{ type: "text", text: "Echo: Hello Claude" }],
      usage: { input_tokens: 4, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
    expect(msg.id).toMatch(/^msg_01/);
    const [req] = up.requests;
    expect(req?.headers["x-api-key"]).toBe(KEY);
    expect(req?.headers["anthropic-version"]).toBe("2023-06-01");
    expect(req?.path).toBe("/v1/messages");
  });

  it("when stop_sequences or max_tokens cut the text, then stop_reason says which", async () => {
    const stopped = await client.messages.create({
      model: "m",
      max_tokens: 100,
      stop_sequences: ["three"],
      messages: [{ role: "user", content: "one two three four" }],
    });
    expect(stopped).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: "three", content: [{ text: "Echo: one two " }] });
    const short = await client.messages.create({ model: "m", max_tokens: 2, messages: [{ role: "user", content: "one two three" }] });
    expect(short).toMatchObject({ stop_reason: "max_tokens", content: [{ text: "Echo: one" }] });
  });

  it("when a message is streamed, then named events arrive in order with a ping and cumulative usage in message_delta", async () => {
    const events = await rawStream({ model: "m", max_tokens: 50, messages: [{ role: "user", content: "a b c" }] });
    const names = events.map(([e]) => e);
    expect(names[0]).toBe("message_start");
    expect(names).toContain("ping");
    expect(names.filter((n) => n === "content_block_delta").length).toBeGreaterThan(2);
    expect(names.slice(-4)).toEqual(["content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    const delta = events.find(([e]) => e === "message_delta")?.[1];
    expect(delta).toMatchObject({ delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { input_tokens: 3, output_tokens: 4 } });
    const start = events[0]?.[1];
    expect(start).toMatchObject({ message: { content: [], stop_reason: null, usage: { output_tokens: 1 } } });
  });

  it("when the SDK streams a message, then finalMessage() assembles the text", async () => {
    const stream = client.messages.stream({ model: "m", max_tokens: 50, messages: [{ role: "user", content: "stream this now" }] });
    const texts: string[] = [];
    stream.on("text", (t) => texts.push(t));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([expect.objectContaining({ type: "text", text: "Echo: stream this now" })]);
    expect(texts.length).toBeGreaterThan(2);
    expect(final.usage.output_tokens).toBe(4);
  });
});

describe("tool use", () => {
  it("when tools are offered with tool_choice auto, then a text block precedes parallel tool_use blocks", async () => {
    const msg = await client.messages.create({
      model: "m",
      max_tokens: 100,
      tools: [weather, clock],
      messages: [{ role: "user", content: "Oslo" }],
    });
    expect(msg.stop_reason).toBe("tool_use");
    expect(msg.content.map((b) => b.type)).toEqual(["text", "tool_use", "tool_use"]);
    const call = msg.content[1];
    if (call?.type !== "tool_use") throw new Error("expected tool_use");
    expect(call).toMatchObject({ name: "get_weather", input: { city: "Oslo" } });
    expect(call.id).toMatch(/^toolu_01/);
  });

  it("when tool_choice forces a tool, then only tool_use comes back; disable_parallel_tool_use keeps one", async () => {
    const named = await client.messages.create({
      model: "m",
      max_tokens: 100,
      tools: [weather, clock],
      tool_choice: { type: "tool", name: "get_time" },
      messages: [{ role: "user", content: "now" }],
    });
    expect(named.content).toEqual([expect.objectContaining({ type: "tool_use", name: "get_time", input: {} })]);
    const any = await client.messages.create({
      model: "m",
      max_tokens: 100,
      tools: [weather, clock],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      messages: [{ role: "user", content: "now" }],
    });
    expect(any.content.map((b) => b.type)).toEqual(["tool_use"]);
  });

  it("when tool_choice is none or the last turn is a tool_result, then the answer is text", async () => {
    const none = await client.messages.create({
      model: "m",
      max_tokens: 100,
      tools: [weather],
      tool_choice: { type: "none" },
      messages: [{ role: "user", content: "hi" }],
    });
    expect(none).toMatchObject({ stop_reason: "end_turn", content: [{ type: "text", text: "Echo: hi" }] });
    const after = await client.messages.create({
      model: "m",
      max_tokens: 100,
      tools: [weather],
      messages: [
        { role: "user", content: "Oslo" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Oslo" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "rain" }] },
      ],
    });
    expect(after).toMatchObject({ stop_reason: "end_turn", content: [{ type: "text", text: "Echo: rain" }] });
  });

  it("when tool use is streamed, then input_json_delta pieces start with an empty one and finalMessage() parses the input", async () => {
    const events = await rawStream({
      model: "m",
      max_tokens: 100,
      tools: [weather],
      tool_choice: { type: "any" },
      messages: [{ role: "user", content: "Lima" }],
    });
    const start = events.find(([e]) => e === "content_block_start")?.[1];
    expect(start).toMatchObject({ index: 0, content_block: { type: "tool_use", name: "get_weather", input: {} } });
    const pieces = events.filter(([e]) => e === "content_block_delta").map(([, d]) => d.delta as { type: string; partial_json: string });
    expect(pieces[0]).toEqual({ type: "input_json_delta", partial_json: "" });
    expect(pieces.length).toBeGreaterThan(2);
    expect(JSON.parse(pieces.map((p) => p.partial_json).join(""))).toEqual({ city: "Lima" });

    const final = await client.messages.stream({ model: "m", max_tokens: 100, tools: [weather], messages: [{ role: "user", content: "Lima" }] }).finalMessage();
    expect(final.stop_reason).toBe("tool_use");
    expect(final.content[1]).toMatchObject({ type: "tool_use", input: { city: "Lima" } });
  });
});

describe("auth, versions and errors", () => {
  it("when a 529 is scripted, then the SDK raises an overloaded APIError carrying the request id", async () => {
    up.script({ status: 529 });
    const err = await client.messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    if (!(err instanceof Anthropic.APIError)) return;
    expect(err.status).toBe(529);
    expect(err.error).toMatchObject({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
    expect(err.requestID).toMatch(/^req_011/);
    expect(err.error).toMatchObject({ request_id: err.requestID });
  });

  it("when the key comes as a Bearer token, then it is accepted; a wrong key gets authentication_error", async () => {
    const bearer = new Anthropic({ baseURL: up.url, authToken: KEY, apiKey: null, maxRetries: 0 });
    const ok = await bearer.messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "yo" }] });
    expect(ok.content[0]).toMatchObject({ text: "Echo: yo" });
    expect(up.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    const wrong = new Anthropic({ baseURL: up.url, apiKey: "nope", maxRetries: 0 });
    const err = await wrong.messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "yo" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    if (err instanceof Anthropic.APIError) expect(err.error).toMatchObject({ error: { type: "authentication_error", message: "invalid x-api-key" } });
  });

  it("when anthropic-version is 2026-10-21, then temperature is rejected with 400 and a request without it passes", async () => {
    const v2026 = new Anthropic({ baseURL: up.url, apiKey: KEY, maxRetries: 0, defaultHeaders: { "anthropic-version": "2026-10-21" } });
    const err = await v2026.messages
      .create({ model: "m", max_tokens: 10, temperature: 1, messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    if (err instanceof Anthropic.APIError) {
      expect(err.error).toMatchObject({ error: { type: "invalid_request_error", message: "temperature: Extra inputs are not permitted" } });
    }
    const ok = await v2026.messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "x" }] });
    expect(ok.stop_reason).toBe("end_turn");
    expect(up.requests.at(-1)?.headers["anthropic-version"]).toBe("2026-10-21");
  });

  it("when anthropic-version is missing or unknown, then the real 400 messages come back", async () => {
    const call = (headers: Record<string, string>) =>
      fetch(`${up.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": KEY, ...headers },
        body: JSON.stringify({ model: "m", max_tokens: 1, messages: [] }),
      });
    const missing = await call({});
    expect(missing.status).toBe(400);
    const body = (await missing.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: "anthropic-version: header is required" } });
    expect(body.request_id).toBe(missing.headers.get("request-id"));
    const unknown = await call({ "anthropic-version": "2024-01-01" });
    expect(await unknown.json()).toMatchObject({ error: { message: 'anthropic-version: "2024-01-01" is not a valid version' } });
  });

  it("when a stream is cut by dropAfterChunks, then finalMessage() rejects and the request is not marked aborted", async () => {
    up.script({ dropAfterChunks: 4 });
    const err = await client.messages
      .stream({ model: "m", max_tokens: 50, messages: [{ role: "user", content: "a b c d" }] })
      .finalMessage()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(up.requests[0]).toMatchObject({ chunksWritten: 4, aborted: false });
  });
});
