import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { createInProcessBus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { internalHeaders, type Identity } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createInferenceService, type InferenceService } from "../service";

const SECRET = "chat-usage-test-internal-secret";
const UPSTREAM_KEY = "sk-chat-usage-upstream";
const identity: Identity = { workspace_id: "ws_1", key_id: "key_1", plan: "pro", models: [["*"]], tools: [] };
const limits = { requests_per_minute: 100, tokens_per_minute: 100_000 };

let upstream: UpstreamEmulator;
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
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${baseUrl}/v1/chat/completions`,
      {
        method: "POST",
        headers: { "content-type": "application/json", [internalHeaders.identity]: signIdentity(identity, SECRET) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (part: string) => (text += part));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body: text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** The `data:` payloads of an SSE body, `[DONE]` left out. */
function sseData(body: string): Record<string, unknown>[] {
  return body
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice("data: ".length)) as Record<string, unknown>);
}

const messages = [{ role: "user", content: "count my tokens please" }];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  const gateway = GatewayConfig.parse({
    providers: { up: { kind: "openai", base_url: upstream.url, api_key_env: "CHAT_USAGE_KEY" } },
    models: { "chat-local": { type: "chat", routes: [{ provider: "up", model: "gpt-4o-mini" }] } },
    plans: { plus: limits, pro: limits, enterprise: limits },
  });
  // Log lines are not what these tests look at; keep the test output clean.
  const logger = createLogger({ service: "inference-test", level: "warn", destination: new Writable({ write: (_c, _e, done) => done() }) });
  service = createInferenceService({
    settings: { host: "127.0.0.1", port: 0, internalSecret: SECRET, bodyLimitBytes: 1_000_000 },
    gateway,
    secrets: { up: UPSTREAM_KEY },
    bus: createInProcessBus({ logger }),
    logger,
  });
  baseUrl = (await service.start()).url;
});

afterAll(async () => {
  await service?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

describe("chat usage reported to ingress", () => {
  it("when a chat answer is not streamed, then the usage header carries the body's total_tokens", async () => {
    const answer = await post({ model: "chat-local", messages });
    expect(answer.status).toBe(200);
    const completion = JSON.parse(answer.body) as { usage: { total_tokens: number } };
    expect(completion.usage.total_tokens).toBeGreaterThan(0);
    expect(answer.headers[internalHeaders.usageTokens]).toBe(String(completion.usage.total_tokens));
    expect(upstream.requests.at(-1)?.body).not.toHaveProperty("stream_options");
  });

  it("when a stream is asked for without include_usage, then usage comes only as a trailer and the chunks look as if it were off", async () => {
    const answer = await post({ model: "chat-local", messages, stream: true });
    expect(answer.status).toBe(200);
    expect(answer.headers.trailer).toBe(internalHeaders.usageTokens);
    expect(upstream.requests.at(-1)?.body).toMatchObject({ stream_options: { include_usage: true } });

    const chunks = sseData(answer.body);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk).not.toHaveProperty("usage");
      expect(chunk.choices).not.toEqual([]);
    }
    expect(answer.body.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(Number(answer.trailers[internalHeaders.usageTokens])).toBeGreaterThan(0);
  });

  it("when a stream is asked for with include_usage, then the usage chunk is relayed and the trailer matches it", async () => {
    const answer = await post({ model: "chat-local", messages, stream: true, stream_options: { include_usage: true } });
    expect(answer.status).toBe(200);

    const chunks = sseData(answer.body);
    const last = chunks.at(-1) as { choices: unknown[]; usage: { total_tokens: number } };
    expect(last.choices).toEqual([]);
    expect(last.usage.total_tokens).toBeGreaterThan(0);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.usage).toBeNull();
    expect(answer.trailers[internalHeaders.usageTokens]).toBe(String(last.usage.total_tokens));
  });

  it("when both kinds of stream ask the same question, then they report the same total", async () => {
    const quiet = await post({ model: "chat-local", messages, stream: true });
    const loud = await post({ model: "chat-local", messages, stream: true, stream_options: { include_usage: true } });
    expect(quiet.trailers[internalHeaders.usageTokens]).toMatch(/^[1-9]\d*$/);
    expect(quiet.trailers[internalHeaders.usageTokens]).toBe(loud.trailers[internalHeaders.usageTokens]);
  });

  it("when the upstream answers with an error status, then no usage header is sent", async () => {
    upstream.script({ status: 400 });
    const answer = await post({ model: "chat-local", messages });
    expect(answer.status).toBe(400);
    expect(answer.headers[internalHeaders.usageTokens]).toBeUndefined();
    expect(answer.trailers[internalHeaders.usageTokens]).toBeUndefined();

    upstream.script({ status: 500 }, { status: 500 }, { status: 500 }); // the first try and both retries
    const streamed = await post({ model: "chat-local", messages, stream: true });
    expect(streamed.status).toBeGreaterThanOrEqual(500);
    expect(streamed.headers[internalHeaders.usageTokens]).toBeUndefined();
    expect(streamed.headers.trailer).toBeUndefined();
  });
});
