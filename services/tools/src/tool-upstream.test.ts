import { Writable } from "node:stream";
import { createInProcessBus } from "@gw/bus";
import { ConfigError, GatewayConfig } from "@gw/config";
import { createLogger } from "@gw/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startToolRouteTestService, type ToolRouteTestService } from "./route-test-service";
import { createToolsService } from "./service";
import { resolveToolUpstream } from "./tool-upstream";

const plans = { plus: { requests_per_minute: 1, tokens_per_minute: 1 }, pro: { requests_per_minute: 1, tokens_per_minute: 1 }, enterprise: { requests_per_minute: 1, tokens_per_minute: 1 } };
const gateway = GatewayConfig.parse({
  providers: {
    webtool: { kind: "tavily", base_url: "http://127.0.0.1:9/", api_key_env: "TV", timeout_ms: 1234, max_retries: 3, headers: { "x-extra": "1" } },
  },
  plans,
});

describe("resolveToolUpstream", () => {
  it("when the provider and its credential are configured, then the upstream carries both and the config's settings", () => {
    expect(resolveToolUpstream(gateway, { webtool: "tvly-platform" }, "webtool")).toEqual({
      ok: true,
      value: { tool: "webtool", baseUrl: "http://127.0.0.1:9/", apiKey: "tvly-platform", timeoutMs: 1234, maxRetries: 3, headers: { "x-extra": "1" } },
    });
  });

  it("when an enterprise workspace has its own credential, then it is used instead of the platform's", () => {
    const out = resolveToolUpstream(gateway, { webtool: "tvly-platform" }, "webtool", { webtool: "tvly-workspace" });
    expect(out.ok && out.value.apiKey).toBe("tvly-workspace");
  });

  it("when the tool has no provider, then 404 not_found; when its credential is unset, then 503 provider_not_configured", () => {
    const none = resolveToolUpstream(gateway, {}, "serptool");
    expect(!none.ok && none.error).toMatchObject({ code: "not_found", status: 404, message: "The tool `serptool` is not configured on this gateway" });
    const keyless = resolveToolUpstream(gateway, {}, "webtool");
    expect(!keyless.ok && keyless.error).toMatchObject({ code: "provider_not_configured", status: 503 });
  });
});

describe("when the tools service starts with a tool provider of the wrong kind", () => {
  it("then it refuses, naming the key", () => {
    const wrong = GatewayConfig.parse({ providers: { serptool: { kind: "openai", base_url: "http://127.0.0.1:9" } }, plans });
    const logger = createLogger({ service: "t", level: "silent", destination: new Writable({ write: (_c, _e, done) => done() }) });
    expect(() =>
      createToolsService({ settings: { host: "127.0.0.1", port: 0, internalSecret: "s" }, gateway: wrong, secrets: {}, bus: createInProcessBus({ logger }), logger }),
    ).toThrow(ConfigError);
    expect(() =>
      createToolsService({ settings: { host: "127.0.0.1", port: 0, internalSecret: "s" }, gateway: wrong, secrets: {}, bus: createInProcessBus({ logger }), logger }),
    ).toThrow(/providers\.serptool\.kind/);
  });
});

describe("when a tool is missing from the configuration or has no credential", () => {
  let service: ToolRouteTestService;
  beforeAll(async () => {
    service = await startToolRouteTestService({ upstreams: { webtool: { kind: "tavily", url: "http://127.0.0.1:9", key: undefined } } });
  });
  afterAll(() => service?.stop());

  it("then its routes answer 404 (not configured) or 503 (no credential) in the OpenAI envelope, after validation", async () => {
    const serp = await service.get("/v1/tools/serptool/search?q=x");
    expect(serp.status).toBe(404);
    expect(serp.body).toEqual({ error: { message: "The tool `serptool` is not configured on this gateway", type: "invalid_request_error", param: null, code: "not_found" } });
    const web = await service.post("/v1/tools/webtool/search", { query: "x" });
    expect(web.status).toBe(503);
    expect(web.body.error).toMatchObject({ code: "provider_not_configured", message: "The tool `webtool` has no provider credential configured" });
    expect((await service.post("/v1/tools/webtool/search", { query: "" })).status).toBe(400);
  });
});
