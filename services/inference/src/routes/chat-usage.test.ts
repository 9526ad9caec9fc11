import { internalHeaders } from "@gw/contracts";
import { startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sseData, reportedTokens, startRouteTestService, type RouteTestService } from "./route-test-service";

const UPSTREAM_KEY = "sk-chat-usage-upstream";

let upstream: UpstreamEmulator;
let service: RouteTestService;

const post = (body: unknown) => service.post("/v1/chat/completions", body);

const messages = [{ role: "user", content: "count my tokens please" }];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  service = await startRouteTestService({
    // The config's default retries: the error case below scripts the first try and both retries.
    upstreams: { up: { kind: "openai", url: upstream.url, key: UPSTREAM_KEY, maxRetries: 2 } },
    models: { "chat-local": { type: "chat", provider: "up", model: "gpt-4o-mini" } },
  });
});

afterAll(async () => {
  await service?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

describe("chat usage reported to ingress", () => {
  it("when a chat answer is not streamed, then its headers report the body's total_tokens", async () => {
    const answer = await post({ model: "chat-local", messages });
    expect(answer.status).toBe(200);
    const completion = JSON.parse(answer.text) as { usage: { total_tokens: number } };
    expect(completion.usage.total_tokens).toBeGreaterThan(0);
    expect(reportedTokens(answer.headers)).toBe(String(completion.usage.total_tokens));
    // In the outcome, not in a header of its own: ingress parses one internal header per answer.
    expect(answer.headers[internalHeaders.usageTokens]).toBeUndefined();
    expect(upstream.requests.at(-1)?.body).not.toHaveProperty("stream_options");
  });

  it("when a stream is asked for without include_usage, then usage comes only as a trailer and the chunks look as if it were off", async () => {
    const answer = await post({ model: "chat-local", messages, stream: true });
    expect(answer.status).toBe(200);
    expect(answer.headers.trailer).toBe(`${internalHeaders.usageTokens}, ${internalHeaders.outcome}`);
    expect(upstream.requests.at(-1)?.body).toMatchObject({ stream_options: { include_usage: true } });

    const chunks = sseData(answer.text);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk).not.toHaveProperty("usage");
      expect(chunk.choices).not.toEqual([]);
    }
    expect(answer.text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(Number(reportedTokens(answer.trailers))).toBeGreaterThan(0);
  });

  it("when a stream is asked for with include_usage, then the usage chunk is relayed and the trailer matches it", async () => {
    const answer = await post({ model: "chat-local", messages, stream: true, stream_options: { include_usage: true } });
    expect(answer.status).toBe(200);

    const chunks = sseData(answer.text);
    const last = chunks.at(-1) as { choices: unknown[]; usage: { total_tokens: number } };
    expect(last.choices).toEqual([]);
    expect(last.usage.total_tokens).toBeGreaterThan(0);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.usage).toBeNull();
    expect(reportedTokens(answer.trailers)).toBe(String(last.usage.total_tokens));
  });

  it("when both kinds of stream ask the same question, then they report the same total", async () => {
    const quiet = await post({ model: "chat-local", messages, stream: true });
    const loud = await post({ model: "chat-local", messages, stream: true, stream_options: { include_usage: true } });
    expect(reportedTokens(quiet.trailers)).toMatch(/^[1-9]\d*$/);
    expect(reportedTokens(quiet.trailers)).toBe(reportedTokens(loud.trailers));
  });

  it("when the upstream answers with an error status, then no tokens are reported", async () => {
    upstream.script({ status: 400 });
    const answer = await post({ model: "chat-local", messages });
    expect(answer.status).toBe(400);
    expect(reportedTokens(answer.headers)).toBeUndefined();
    expect(reportedTokens(answer.trailers)).toBeUndefined();

    upstream.script({ status: 500 }, { status: 500 }, { status: 500 }); // the first try and both retries
    const streamed = await post({ model: "chat-local", messages, stream: true });
    expect(streamed.status).toBeGreaterThanOrEqual(500);
    expect(reportedTokens(streamed.headers)).toBeUndefined();
    expect(streamed.headers.trailer).toBeUndefined();
  });
});
