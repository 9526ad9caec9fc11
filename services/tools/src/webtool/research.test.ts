import { GatewayConfig } from "@gw/config";
import { startTavilyUpstream, type TavilyUpstream } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { instantRetry } from "../route-test-service";
import { createUpstreamAgent } from "@gw/service-kit";
import { getResearch, startResearch, type WebtoolResearchDeps } from "./research";

const KEY = "tvly-research-functions";
const plans = {
  plus: { requests_per_minute: 1, tokens_per_minute: 1 },
  pro: { requests_per_minute: 1, tokens_per_minute: 1 },
  enterprise: { requests_per_minute: 1, tokens_per_minute: 1 },
};
const agent = createUpstreamAgent();
let up: TavilyUpstream;
let deps: WebtoolResearchDeps;

beforeAll(async () => {
  up = await startTavilyUpstream({ apiKey: KEY, research: { pendingPolls: 0, inProgressPolls: 1 } });
  const gateway = GatewayConfig.parse({ providers: { webtool: { kind: "tavily", base_url: up.url, api_key_env: "TV", max_retries: 1 } }, plans });
  deps = { gateway, secrets: { webtool: KEY }, agent, retry: instantRetry };
});
afterAll(async () => {
  await up?.close();
  await agent.close();
});
beforeEach(() => up.reset());

describe("startResearch and getResearch", () => {
  it("when a task is started and read until it ends, then in_progress, then completed with content and sources", async () => {
    const started = await startResearch(deps, { input: "Quantum error correction", model: "pro" });
    if (!started.ok) throw started.error;
    expect(started.value).toMatchObject({ status: "pending", model: "pro", input: "Quantum error correction" });
    const first = await getResearch(deps, started.value.request_id);
    expect(first).toMatchObject({ ok: true, value: { status: "in_progress" } });
    const done = await getResearch(deps, started.value.request_id);
    expect(done).toMatchObject({ ok: true, value: { status: "completed", content: expect.stringContaining("Quantum"), sources: expect.any(Array) } });
  });

  it("when an enterprise workspace brings its own credential, then that one is sent", async () => {
    const own = await startTavilyUpstream({ apiKey: "tvly-workspace-own" });
    try {
      const gateway = GatewayConfig.parse({ providers: { webtool: { kind: "tavily", base_url: own.url, api_key_env: "TV" } }, plans });
      const started = await startResearch({ gateway, secrets: { webtool: KEY }, agent, credentials: { webtool: "tvly-workspace-own" } }, { input: "x" });
      expect(started.ok).toBe(true);
      expect(own.requests[0]!.headers.authorization).toBe("Bearer tvly-workspace-own");
    } finally {
      await own.close();
    }
  });

  it("when the provider answers a known status without its fields, then a malformed-answer error, not a success", async () => {
    up.script({ status: 200, body: { request_id: "r1", status: "completed" } }, { status: 200, body: { request_id: "r1", status: "completed" } });
    expect(await getResearch(deps, "r1")).toMatchObject({ ok: false, error: { code: "upstream_error", status: 502 } });
    up.script({ status: 200, body: { request_id: "r1", status: "queued_for_review" } });
    expect(await getResearch(deps, "r1")).toMatchObject({ ok: true, value: { status: "queued_for_review" } });
  });

  it("when no webtool provider is configured or its credential is unset, then error values, and nothing is sent", async () => {
    const none = GatewayConfig.parse({ providers: {}, plans });
    expect(await startResearch({ ...deps, gateway: none }, { input: "x" })).toMatchObject({ ok: false, error: { code: "not_found", status: 404 } });
    expect(await getResearch({ ...deps, secrets: {} }, "r1")).toMatchObject({ ok: false, error: { code: "provider_not_configured", status: 503 } });
    expect(up.requests).toHaveLength(0);
  });
});
