import { Writable } from "node:stream";
import { createInProcessBus } from "@gw/bus";
import { ConfigError, GatewayConfig } from "@gw/config";
import { createLogger } from "@gw/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { internalHeaders, type Identity } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { credentialsTransitPurpose, Sealer, signIdentity, UNOPENED_CREDENTIAL } from "@gw/service-kit";
import { startSerpApiUpstream, startTavilyUpstream, type UpstreamEmulator } from "@gw/testkit";
import { instantRetry, startToolRouteTestService, type ToolRouteTestService } from "./route-test-service";
import { createToolsService } from "./service";
import { credentialAware, resolveToolUpstream } from "./tool-upstream";

const plans = {
  plus: { requests_per_minute: 1, tokens_per_minute: 1 },
  pro: { requests_per_minute: 1, tokens_per_minute: 1 },
  enterprise: { requests_per_minute: 1, tokens_per_minute: 1 },
};
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

  it("when an enterprise workspace has its own credential, then it is used instead of the platform's, and marked as the workspace's", () => {
    const out = resolveToolUpstream(gateway, { webtool: "tvly-platform" }, "webtool", { webtool: "tvly-workspace" });
    expect(out.ok && out.value.apiKey).toBe("tvly-workspace");
    expect(out.ok && out.value.ownCredential).toBe(true);
  });

  it("when the workspace's own credential could not be opened, then the call fails naming the tool, never falling back to the platform's", () => {
    const out = resolveToolUpstream(gateway, { webtool: "tvly-platform" }, "webtool", { webtool: UNOPENED_CREDENTIAL });
    expect(!out.ok && out.error).toMatchObject({ code: "provider_credential_unavailable", status: 424 });
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
      createToolsService({
        settings: { host: "127.0.0.1", port: 0, internalSecret: "s" },
        gateway: wrong,
        secrets: {},
        bus: createInProcessBus({ logger }),
        logger,
      }),
    ).toThrow(ConfigError);
    expect(() =>
      createToolsService({
        settings: { host: "127.0.0.1", port: 0, internalSecret: "s" },
        gateway: wrong,
        secrets: {},
        bus: createInProcessBus({ logger }),
        logger,
      }),
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
    expect(serp.body).toEqual({
      error: { message: "The tool `serptool` is not configured on this gateway", type: "invalid_request_error", param: null, code: "not_found" },
    });
    const web = await service.post("/v1/tools/webtool/search", { query: "x" });
    expect(web.status).toBe(503);
    expect(web.body.error).toMatchObject({ code: "provider_not_configured", message: "The tool `webtool` has no provider credential configured" });
    expect((await service.post("/v1/tools/webtool/search", { query: "" })).status).toBe(400);
  });
});

describe("credentialAware", () => {
  const upstream = (own: boolean) => {
    const out = resolveToolUpstream(gateway, { webtool: "tvly-platform" }, "webtool", own ? { webtool: "tvly-workspace" } : undefined);
    if (!out.ok) throw out.error;
    return out.value;
  };
  const refused = new GatewayError("upstream_error", "The web tool provider refused the gateway's credentials", { retryable: false });

  it("when the provider refuses a workspace's own credential, then it is the workspace's 424 naming the tool; the platform's stays as it was", () => {
    expect(credentialAware(upstream(true), 401, refused)).toMatchObject({ code: "provider_credential_refused", status: 424, retryable: false });
    expect(credentialAware(upstream(true), 403, refused).message).toContain("`webtool` refused this workspace's own credential (HTTP 403)");
    expect(credentialAware(upstream(false), 401, refused)).toBe(refused);
  });

  it("when a 403 was the caller's request (an unsupported URL), or the failure is the provider's, then it is left alone", () => {
    const url = new GatewayError("invalid_request", "The URL is not supported", { param: "url" });
    expect(credentialAware(upstream(true), 403, url)).toBe(url);
    const down = new GatewayError("upstream_error", "failed to answer (500)");
    expect(credentialAware(upstream(true), 500, down)).toBe(down);
  });

  it("when a workspace's own account is out of quota, then the message says it is the workspace's, not the operator's", () => {
    const quota = new GatewayError("upstream_rate_limited", "contact the gateway's operator", {
      type: "insufficient_quota",
      headers: { "x-should-retry": "false" },
      retryable: false,
    });
    const mapped = credentialAware(upstream(true), 432, quota);
    expect(mapped).toMatchObject({ status: 429, type: "insufficient_quota", retryable: false, headers: { "x-should-retry": "false" } });
    expect(mapped.message).toContain("this workspace's own credential");
  });
});

describe("when a workspace's own tool credential is refused by the provider", () => {
  const SECRET = "tool-upstream-test-internal-secret";
  const identity: Identity = { workspace_id: "ws_own", key_id: "key_1", plan: "enterprise", models: [["*"]], tools: ["webtool", "serptool"] };
  const logger = createLogger({ service: "t", level: "silent", destination: new Writable({ write: (_c, _e, done) => done() }) });
  let tavily: UpstreamEmulator;
  let serp: UpstreamEmulator;
  let url: string;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    tavily = await startTavilyUpstream({ apiKey: "tvly-platform" });
    serp = await startSerpApiUpstream({ apiKey: "serp-platform" });
    const config = GatewayConfig.parse({
      providers: {
        webtool: { kind: "tavily", base_url: tavily.url, api_key_env: "TV", max_retries: 2 },
        serptool: { kind: "serpapi", base_url: serp.url, api_key_env: "SP", max_retries: 2 },
      },
      plans,
    });
    const service = createToolsService({
      settings: { host: "127.0.0.1", port: 0, internalSecret: SECRET },
      gateway: config,
      secrets: { webtool: "tvly-platform", serptool: "serp-platform" },
      bus: createInProcessBus({ logger }),
      logger,
      retry: instantRetry,
    });
    url = (await service.start()).url;
    stop = () => service.stop();
  });
  afterAll(async () => {
    await stop?.();
    await tavily?.close();
    await serp?.close();
  });

  const headers = (credentials: Record<string, string>) => ({
    "content-type": "application/json",
    [internalHeaders.identity]: signIdentity(identity, SECRET),
    [internalHeaders.credentials]: new Sealer(SECRET, credentialsTransitPurpose).seal(JSON.stringify(credentials), identity.workspace_id),
  });

  it("then webtool and serptool answer the non-retryable 424 naming the tool, after one upstream call each", async () => {
    const web = await fetch(`${url}/v1/tools/webtool/search`, {
      method: "POST",
      headers: headers({ webtool: "tvly-revoked" }),
      body: JSON.stringify({ query: "x" }),
    });
    expect(web.status).toBe(424);
    expect(await web.json()).toMatchObject({
      error: { code: "provider_credential_refused", message: expect.stringContaining("`webtool` refused this workspace's own credential") },
    });
    const search = await fetch(`${url}/v1/tools/serptool/search?q=x`, { headers: headers({ serptool: "serp-revoked" }) });
    expect(search.status).toBe(424);
    expect(await search.json()).toMatchObject({ error: { code: "provider_credential_refused", message: expect.stringContaining("`serptool`") } });
    expect(tavily.requests.map((r) => r.headers.authorization)).toEqual(["Bearer tvly-revoked"]);
    expect(serp.requests.map((r) => r.query.api_key)).toEqual(["serp-revoked"]);
  });
});
