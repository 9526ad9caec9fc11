import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { Writable } from "node:stream";
import { createInProcessBus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { internalHeaders, type Identity } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { assertOpenAI, startAnthropicUpstream, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createInferenceService, type InferenceService } from "../service";

const SECRET = "responses-route-test-internal-secret";
const OPENAI_KEY = "sk-responses-route-openai";
const ANTHROPIC_KEY = "sk-ant-responses-route";
const identity: Identity = { workspace_id: "ws_1", key_id: "key_1", plan: "pro", models: [["*"]], tools: [] };
const limits = { requests_per_minute: 100, tokens_per_minute: 100_000 };

let openaiUp: UpstreamEmulator;
let anthropicUp: UpstreamEmulator;
let service: InferenceService;
let baseUrl: string;

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  body: string;
}

/** node:http rather than fetch, because only it exposes the trailers once the body has ended. */
function post(body: unknown): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${baseUrl}/v1/responses`,
      { method: "POST", headers: { "content-type": "application/json", [internalHeaders.identity]: signIdentity(identity, SECRET) } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (part: string) => (text += part));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body: text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

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
  const gateway = GatewayConfig.parse({
    providers: {
      oa: { kind: "openai", base_url: openaiUp.url, api_key_env: "RESP_OA_KEY" },
      ant: { kind: "anthropic", base_url: anthropicUp.url, api_key_env: "RESP_ANT_KEY" },
    },
    models: {
      "gpt-local": { type: "chat", routes: [{ provider: "oa", model: "gpt-4o-mini" }] },
      "claude-local": { type: "chat", routes: [{ provider: "ant", model: "claude-sonnet-4-5" }] },
    },
    plans: { plus: limits, pro: limits, enterprise: limits },
  });
  const logger = createLogger({ service: "inference-test", level: "warn", destination: new Writable({ write: (_c, _e, done) => done() }) });
  service = createInferenceService({
    settings: { host: "127.0.0.1", port: 0, internalSecret: SECRET, bodyLimitBytes: 1_000_000 },
    gateway,
    secrets: { oa: OPENAI_KEY, ant: ANTHROPIC_KEY },
    bus: createInProcessBus({ logger }),
    logger,
  });
  baseUrl = (await service.start()).url;
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
    it("when the answer is not streamed, then it is a Response and the usage header carries its total", async () => {
      const answer = await post({ model, input: "hello there", instructions: "Be brief.", store: true });
      expect(answer.status).toBe(200);
      const body = JSON.parse(answer.body) as { usage: { total_tokens: number } };
      assertOpenAI("Response", body);
      expect(body).toMatchObject({ object: "response", model, status: "completed", store: false, output: [{ type: "message", content: [{ type: "output_text", text: "Echo: hello there" }] }] });
      expect(answer.headers[internalHeaders.usageTokens]).toBe(String(body.usage.total_tokens));
    });

    it("when the answer is streamed, then named events come without [DONE], and the usage goes in a trailer", async () => {
      const answer = await post({ model, input: "stream me", stream: true });
      expect(answer.status).toBe(200);
      expect(answer.headers["content-type"]).toMatch(/^text\/event-stream/);
      expect(answer.body).not.toContain("[DONE]");
      const events = frames(answer.body);
      for (const { event, data } of events) {
        expect(event).toBe(data.type);
        assertOpenAI("ResponseStreamEvent", data);
      }
      expect(events[0]?.event).toBe("response.created");
      const completed = events.at(-1)?.data as { type: string; response: { usage: { total_tokens: number }; output: unknown[] } };
      expect(completed.type).toBe("response.completed");
      expect(completed.response.output).toMatchObject([{ content: [{ text: "Echo: stream me" }] }]);
      expect(answer.trailers[internalHeaders.usageTokens]).toBe(String(completed.response.usage.total_tokens));
    });
  });
}

describe("POST /v1/responses refusals", () => {
  it("when previous_response_id is set, then it is a 400 naming it and nothing reaches an upstream", async () => {
    const answer = await post({ model: "gpt-local", input: "x", previous_response_id: "resp_123" });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { type: "invalid_request_error", param: "previous_response_id", message: expect.stringMatching(/not supported/) } });
    expect(openaiUp.requests).toHaveLength(0);
  });

  it("when an Anthropic-kind model gets json_schema output, then the 400 names text.format", async () => {
    const answer = await post({ model: "claude-local", input: "x", text: { format: { type: "json_schema", name: "o", schema: { type: "object" } } } });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { param: "text.format" } });
    expect(anthropicUp.requests).toHaveLength(0);
  });

  it("when the body is invalid, then the 400 names the field in the OpenAI envelope", async () => {
    const answer = await post({ model: "gpt-local", input: [{ type: "function_call_output", output: "x" }] });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { param: "input[0].call_id", code: "invalid_request" } });
  });

  it("when the upstream cuts the stream, then an error event and response.failed end it", async () => {
    openaiUp.script({ dropAfterChunks: 2 });
    const answer = await post({ model: "gpt-local", input: "cut me", stream: true });
    const events = frames(answer.body);
    expect(events.slice(-2).map((e) => e.event)).toEqual(["error", "response.failed"]);
    expect(events.at(-1)?.data).toMatchObject({ response: { status: "failed", error: { code: "server_error" } } });
  });
});
