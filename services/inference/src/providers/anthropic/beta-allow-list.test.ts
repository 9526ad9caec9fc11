import { startAnthropicUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startRouteTestService, type RouteTestService } from "../../routes/route-test-service";

/**
 * `anthropic-beta` through the inference service to the Anthropic emulator: only the values on the
 * provider's `anthropic_beta` allow-list reach it, on /v1/messages and on chat translated to it.
 */
const KEY = "sk-ant-beta-allow-list";
const ALLOWED = ["context-1m-2025-08-07", "token-efficient-tools-2025-02-19"];
// Betas that turn on server-side tools reaching URLs or the platform's files.
const DISALLOWED = ["web-fetch-2025-09-10", "files-api-2025-04-14", "mcp-client-2025-04-04"];

let open: UpstreamEmulator;
let closed: UpstreamEmulator;
let service: RouteTestService;

beforeAll(async () => {
  open = await startAnthropicUpstream({ apiKey: KEY });
  closed = await startAnthropicUpstream({ apiKey: KEY });
  service = await startRouteTestService({
    upstreams: {
      ant: { kind: "anthropic", url: open.url, key: KEY, anthropicBeta: ALLOWED },
      plain: { kind: "anthropic", url: closed.url, key: KEY },
    },
    models: {
      "claude-beta": { type: "chat", provider: "ant", model: "claude-sonnet-4-5" },
      "claude-plain": { type: "chat", provider: "plain", model: "claude-sonnet-4-5" },
    },
  });
});

afterAll(async () => {
  await service?.stop();
  await open?.close();
  await closed?.close();
});

beforeEach(() => {
  open.reset();
  closed.reset();
});

const messages = (model: string) => ({ model, max_tokens: 20, messages: [{ role: "user", content: "beta" }] });
const chat = (model: string, stream = false) => ({ model, stream, messages: [{ role: "user", content: "beta" }] });
const betaHeader = (...values: string[]) => ({ "anthropic-beta": values.join(", ") });

describe("anthropic-beta allow-list", () => {
  it("when a caller sends allowed and disallowed betas on /v1/messages, then only the allowed ones reach Anthropic, as one header", async () => {
    const res = await service.post("/v1/messages", messages("claude-beta"), betaHeader(DISALLOWED[0]!, ALLOWED[0]!, DISALLOWED[1]!, ALLOWED[1]!));
    expect(res.status).toBe(200);
    expect(open.requests).toHaveLength(1);
    expect(open.requests[0]?.headers["anthropic-beta"]).toBe(ALLOWED.join(","));
  });

  it("when a caller sends only disallowed betas, then no anthropic-beta header reaches Anthropic and the call still succeeds", async () => {
    const res = await service.post("/v1/messages", messages("claude-beta"), betaHeader(...DISALLOWED));
    expect(res.status).toBe(200);
    expect(open.requests[0]?.headers["anthropic-beta"]).toBeUndefined();
  });

  it("when the provider has no allow-list, then no caller beta is forwarded at all", async () => {
    const res = await service.post("/v1/messages", messages("claude-plain"), betaHeader(ALLOWED[0]!, DISALLOWED[0]!));
    expect(res.status).toBe(200);
    expect(closed.requests).toHaveLength(1);
    expect(closed.requests[0]?.headers["anthropic-beta"]).toBeUndefined();
  });

  it("when chat completions are translated to Anthropic, then the same allow-list applies, streamed or not", async () => {
    for (const stream of [false, true]) {
      open.reset();
      const res = await service.post("/v1/chat/completions", chat("claude-beta", stream), betaHeader(DISALLOWED[2]!, ALLOWED[1]!));
      expect(res.status).toBe(200);
      expect(open.requests[0]?.headers["anthropic-beta"]).toBe(ALLOWED[1]);
    }
  });

  it("when a disallowed beta is disguised by case or spacing, then it is still dropped", async () => {
    await service.post("/v1/messages", messages("claude-beta"), { "anthropic-beta": ` WEB-FETCH-2025-09-10 ,,${ALLOWED[0]}x` });
    expect(open.requests[0]?.headers["anthropic-beta"]).toBeUndefined();
  });
});

describe("model names", () => {
  it("when the model name is 100 kB long, then /v1/messages and /v1/chat/completions answer 400 naming model in their envelopes", async () => {
    const model = "claude-".padEnd(100_000, "x");
    const anthropic = await service.post("/v1/messages", messages(model));
    expect(anthropic.status).toBe(400);
    expect(JSON.parse(anthropic.text)).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("model") } });
    const openai = await service.post("/v1/chat/completions", chat(model));
    expect(openai.status).toBe(400);
    expect(JSON.parse(openai.text)).toMatchObject({ error: { param: "model", code: "invalid_request" } });
    expect(open.requests).toHaveLength(0);
  });
});
