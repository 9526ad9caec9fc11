import { assertOpenAI, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sseData, reportedTokens, startRouteTestService, type RouteTestService } from "./route-test-service";

const UPSTREAM_KEY = "sk-completions-route-upstream";
let upstream: UpstreamEmulator;
let service: RouteTestService;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  service = await startRouteTestService({
    upstreams: { up: { kind: "openai", url: upstream.url, key: UPSTREAM_KEY } },
    models: {
      "instruct-local": { type: "completion", provider: "up", model: "gpt-3.5-turbo-instruct" },
      "chat-local": { type: "chat", provider: "up", model: "gpt-4o-mini" },
    },
  });
});
afterAll(async () => {
  await service?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

const post = (body: unknown) => service.post("/v1/completions", body);

describe("POST /v1/completions", () => {
  it("when a completion is asked, then the upstream gets its own model name and the server's key, and the answer names the public model with usage in the header", async () => {
    const answer = await post({ model: "instruct-local", prompt: "Say hi", max_tokens: 10 });
    expect(answer.status).toBe(200);
    const completion = JSON.parse(answer.text) as { model: string; choices: { text: string }[]; usage: { total_tokens: number } };
    assertOpenAI("CreateCompletionResponse", completion);
    expect(completion.model).toBe("instruct-local");
    expect(completion.choices[0]?.text).toBe("Echo: Say hi");
    expect(reportedTokens(answer.headers)).toBe(String(completion.usage.total_tokens));
    const sent = upstream.requests.at(-1);
    expect(sent?.path).toBe("/v1/completions");
    expect(sent?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(sent?.body).toMatchObject({ model: "gpt-3.5-turbo-instruct", prompt: "Say hi", max_tokens: 10 });
    expect(sent?.body).not.toHaveProperty("stream_options");
  });

  it("when streamed without include_usage, then text_completion chunks and [DONE] come back, usage only in the trailer", async () => {
    const answer = await post({ model: "instruct-local", prompt: "one two three", stream: true });
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(upstream.requests.at(-1)?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const chunks = sseData(answer.text);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({ object: "text_completion", model: "instruct-local" });
      expect(chunk).not.toHaveProperty("usage");
      expect(chunk.choices).not.toEqual([]);
    }
    expect(chunks.map((c) => (c.choices as { text: string }[])[0]?.text).join("")).toBe("Echo: one two three");
    expect(answer.text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(Number(reportedTokens(answer.trailers))).toBeGreaterThan(0);
  });

  it("when streamed with include_usage, then the usage chunk is relayed and the trailer matches it", async () => {
    const answer = await post({ model: "instruct-local", prompt: "hello", stream: true, stream_options: { include_usage: true } });
    const last = sseData(answer.text).at(-1) as { choices: unknown[]; usage: { total_tokens: number } };
    expect(last.choices).toEqual([]);
    expect(reportedTokens(answer.trailers)).toBe(String(last.usage.total_tokens));
  });

  it.each([
    [{ model: "instruct-local" }, "prompt"],
    [{ prompt: "hi" }, "model"],
    [{ model: "instruct-local", prompt: "hi", temperature: 5 }, "temperature"],
    [{ model: "instruct-local", prompt: [{ not: "a prompt" }] }, "prompt"],
  ])("when the body is %j, then a 400 names %s and the upstream is not called", async (body, param) => {
    const answer = await post(body);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { type: "invalid_request_error", param } });
    expect(upstream.requests).toHaveLength(0);
  });

  it("when a chat model is named, then it is a 400 on the model", async () => {
    const answer = await post({ model: "chat-local", prompt: "hi" });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param: "model" } });
  });

  it("when the upstream is rate limited, then it is a 429 with no usage reported", async () => {
    upstream.script({ status: 429 });
    const answer = await post({ model: "instruct-local", prompt: "hi" });
    expect(answer.status).toBe(429);
    expect(reportedTokens(answer.headers)).toBeUndefined();
    expect(answer.text).not.toContain("gpt-3.5-turbo-instruct");
  });

  it("when the upstream cuts the stream, then an error event ends it without [DONE]", async () => {
    upstream.script({ dropAfterChunks: 2 });
    const answer = await post({ model: "instruct-local", prompt: "one two three four", stream: true });
    const events = sseData(answer.text);
    expect(events.at(-1)).toMatchObject({ error: { code: "upstream_error" } });
    expect(answer.text).not.toContain("[DONE]");
  });
});
