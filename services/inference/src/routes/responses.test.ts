import { assertOpenAI, startAnthropicUpstream, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { reportedTokens, startRouteTestService, type RouteTestService } from "./route-test-service";

const OPENAI_KEY = "sk-responses-route-openai";
const ANTHROPIC_KEY = "sk-ant-responses-route";

let openaiUp: UpstreamEmulator;
let anthropicUp: UpstreamEmulator;
let service: RouteTestService;

const post = (body: unknown) => service.post("/v1/responses", body);

/** SSE frames as {event, data}. */
function frames(body: string): { event: string; data: Record<string, unknown> }[] {
  return body
    .split("\n\n")
    .filter((frame) => frame.trim() !== "")
    .map((frame) => {
      const lines = frame.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice("event: ".length) ?? "";
      const data = lines.find((l) => l.startsWith("data: "))?.slice("data: ".length) ?? "null";
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

beforeAll(async () => {
  openaiUp = await startOpenAIUpstream({ apiKey: OPENAI_KEY });
  anthropicUp = await startAnthropicUpstream({ apiKey: ANTHROPIC_KEY });
  service = await startRouteTestService({
    upstreams: {
      oa: { kind: "openai", url: openaiUp.url, key: OPENAI_KEY },
      ant: { kind: "anthropic", url: anthropicUp.url, key: ANTHROPIC_KEY },
    },
    models: {
      "gpt-local": { type: "chat", provider: "oa", model: "gpt-4o-mini" },
      "claude-local": { type: "chat", provider: "ant", model: "claude-sonnet-4-5" },
    },
  });
});

afterAll(async () => {
  await service?.stop();
  await openaiUp?.close();
  await anthropicUp?.close();
});

beforeEach(() => {
  openaiUp.reset();
  anthropicUp.reset();
});

for (const model of ["gpt-local", "claude-local"]) {
  describe(`POST /v1/responses on ${model}`, () => {
    it("when the answer is not streamed, then it is a Response and its headers report its total tokens", async () => {
      const answer = await post({ model, input: "hello there", instructions: "Be brief.", store: true });
      expect(answer.status).toBe(200);
      const body = JSON.parse(answer.text) as { usage: { total_tokens: number } };
      assertOpenAI("Response", body);
      expect(body).toMatchObject({
        object: "response",
        model,
        status: "completed",
        store: false,
        output: [{ type: "message", content: [{ type: "output_text", text: "Echo: hello there" }] }],
      });
      expect(reportedTokens(answer.headers)).toBe(String(body.usage.total_tokens));
    });

    it("when the answer is streamed, then named events come without [DONE], and the usage goes in a trailer", async () => {
      const answer = await post({ model, input: "stream me", stream: true });
      expect(answer.status).toBe(200);
      expect(answer.headers["content-type"]).toMatch(/^text\/event-stream/);
      expect(answer.text).not.toContain("[DONE]");
      const events = frames(answer.text);
      for (const { event, data } of events) {
        expect(event).toBe(data.type);
        assertOpenAI("ResponseStreamEvent", data);
      }
      expect(events[0]?.event).toBe("response.created");
      const completed = events.at(-1)?.data as { type: string; response: { usage: { total_tokens: number }; output: unknown[] } };
      expect(completed.type).toBe("response.completed");
      expect(completed.response.output).toMatchObject([{ content: [{ text: "Echo: stream me" }] }]);
      expect(reportedTokens(answer.trailers)).toBe(String(completed.response.usage.total_tokens));
    });
  });
}

describe("POST /v1/responses refusals", () => {
  it("when previous_response_id is set, then it is a 400 naming it and nothing reaches an upstream", async () => {
    const answer = await post({ model: "gpt-local", input: "x", previous_response_id: "resp_123" });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({
      error: { type: "invalid_request_error", param: "previous_response_id", message: expect.stringMatching(/not supported/) },
    });
    expect(openaiUp.requests).toHaveLength(0);
  });

  it("when an Anthropic-kind model gets json_schema output, then the 400 names text.format", async () => {
    const answer = await post({ model: "claude-local", input: "x", text: { format: { type: "json_schema", name: "o", schema: { type: "object" } } } });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param: "text.format" } });
    expect(anthropicUp.requests).toHaveLength(0);
  });

  it("when the body is invalid, then the 400 names the field in the OpenAI envelope", async () => {
    const answer = await post({ model: "gpt-local", input: [{ type: "function_call_output", output: "x" }] });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param: "input[0].call_id", code: "invalid_request" } });
  });

  it("when the upstream cuts the stream, then an error event and response.failed end it", async () => {
    openaiUp.script({ dropAfterChunks: 2 });
    const answer = await post({ model: "gpt-local", input: "cut me", stream: true });
    const events = frames(answer.text);
    expect(events.slice(-2).map((e) => e.event)).toEqual(["error", "response.failed"]);
    expect(events.at(-1)?.data).toMatchObject({ response: { status: "failed", error: { code: "server_error" } } });
  });
});
