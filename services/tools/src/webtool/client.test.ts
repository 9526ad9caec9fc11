import { createSpecValidator, startTavilyUpstream, type TavilyUpstream } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { instantRetry } from "../route-test-service";
import type { ToolUpstream } from "../tool-upstream";
import { createUpstreamAgent } from "@gw/service-kit";
import { createWebtoolClient, type WebtoolClient } from "./client";

const KEY = "tvly-research-client";
const tavilySpec = createSpecValidator("tavily-openapi.json", "Tavily");
const agent = createUpstreamAgent();
let up: TavilyUpstream;
let client: WebtoolClient;

beforeAll(async () => {
  up = await startTavilyUpstream({ apiKey: KEY, research: { pendingPolls: 1, inProgressPolls: 1 } });
  const upstream: ToolUpstream = { tool: "webtool", baseUrl: up.url, apiKey: KEY, timeoutMs: 2_000, maxRetries: 2, headers: {} };
  client = createWebtoolClient(upstream, agent, instantRetry);
});
afterAll(async () => {
  await up?.close();
  await agent.close();
});
beforeEach(() => up.reset());

describe("research client", () => {
  it("when a task is started, then POST /research carries the input, model and options with the gateway's key", async () => {
    const started = await client.startResearch({ input: "What is new in AI?", model: "mini", citation_format: "apa", output_length: "short" });
    expect(started.ok).toBe(true);
    if (!started.ok) return;
    tavilySpec.assert("POST /research 201", started.value);
    expect(started.value).toMatchObject({ status: "pending", input: "What is new in AI?", model: "mini" });
    expect(up.requests[0]).toMatchObject({
      method: "POST",
      path: "/research",
      body: { input: "What is new in AI?", model: "mini", citation_format: "apa", output_length: "short" },
    });
    expect(up.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("when it is polled, then pending, in_progress, then completed with content and sources (usage never shown)", async () => {
    const started = await client.startResearch({ input: "Rust vs Go" });
    if (!started.ok) throw started.error;
    const id = started.value.request_id;
    const statuses: string[] = [];
    for (let i = 0; i < 3; i++) {
      const polled = await client.getResearch(id);
      if (!polled.ok) throw polled.error;
      statuses.push(polled.value.status);
      if (polled.value.status === "completed") {
        tavilySpec.assert("ResearchTaskCompleted", polled.value);
        expect(polled.value).toMatchObject({
          request_id: id,
          content: expect.stringContaining("Rust vs Go"),
          sources: [expect.objectContaining({ url: expect.any(String) }), expect.anything()],
        });
        expect(polled.value).not.toHaveProperty("usage");
      }
    }
    expect(statuses).toEqual(["pending", "in_progress", "completed"]);
    expect(up.requests.slice(1).map((r) => `${r.method} ${r.path}`)).toEqual(Array(3).fill(`GET /research/${id}`));
  });

  it("when the task fails upstream, then the poll says failed", async () => {
    up.setResearchOptions({ pendingPolls: 0, inProgressPolls: 0 });
    up.failNextResearch();
    const started = await client.startResearch({ input: "anything" });
    if (!started.ok) throw started.error;
    const polled = await client.getResearch(started.value.request_id);
    expect(polled).toMatchObject({ ok: true, value: { status: "failed", request_id: started.value.request_id } });
  });

  it("when the id is unknown, then a 404 not_found error value", async () => {
    const polled = await client.getResearch("no-such-task");
    expect(polled.ok).toBe(false);
    if (!polled.ok) expect(polled.error).toMatchObject({ code: "not_found", status: 404, retryable: false });
  });

  it("when starting fails with a 5xx, then it is not retried (a second POST would start a second task), but a poll is", async () => {
    up.script({ status: 500 });
    const started = await client.startResearch({ input: "x" });
    expect(started).toMatchObject({ ok: false, error: { code: "upstream_error", status: 502, retryable: true } });
    expect(up.requests).toHaveLength(1);
    const ok = await client.startResearch({ input: "x" });
    if (!ok.ok) throw ok.error;
    up.script({ status: 503 });
    const polled = await client.getResearch(ok.value.request_id);
    expect(polled.ok).toBe(true);
    expect(up.requests.filter((r) => r.method === "GET")).toHaveLength(2);
  });

  it("when the plan limit is hit on start, then a non-retryable 429 insufficient_quota", async () => {
    up.script({ status: 432 });
    const started = await client.startResearch({ input: "x" });
    expect(started).toMatchObject({ ok: false, error: { status: 429, type: "insufficient_quota", retryable: false } });
  });
});
