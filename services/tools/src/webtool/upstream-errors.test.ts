import { startTavilyUpstream, type TavilyUpstream } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startToolRouteTestService, type ToolRouteTestService } from "../route-test-service";
import { webtoolHttpError } from "./errors";

const KEY = "tvly-errors-key";
let up: TavilyUpstream;
/** One retry allowed, a 400 ms time-out. */
let service: ToolRouteTestService;

beforeAll(async () => {
  up = await startTavilyUpstream({ apiKey: KEY });
  service = await startToolRouteTestService({ upstreams: { webtool: { kind: "tavily", url: up.url, key: KEY, maxRetries: 1, timeoutMs: 400 } } });
});
afterAll(async () => {
  await service?.stop();
  await up?.close();
});
beforeEach(() => up.reset());

const search = () => service.post("/v1/tools/webtool/search", { query: "errors" });
const errorOf = (body: Record<string, unknown>) => body.error as { message: string; type: string; param: string | null; code: string };

describe("when Tavily fails, then the gateway answers in its own envelope with the right status", () => {
  it("429 with retry-after: 429 upstream_rate_limited with the same retry-after, and no retry", async () => {
    up.script({ status: 429, headers: { "retry-after": "7" } });
    const { status, headers, body } = await search();
    expect(status).toBe(429);
    expect(headers.get("retry-after")).toBe("7");
    expect(errorOf(body)).toMatchObject({ code: "upstream_rate_limited", type: "rate_limit_error" });
    expect(errorOf(body).message).toContain("excessive requests");
    expect(up.requests).toHaveLength(1);
  });

  it("429 without retry-after: the caller is still told when to retry (5 s)", async () => {
    up.script({ status: 429 });
    const { status, headers } = await search();
    expect(status).toBe(429);
    expect(headers.get("retry-after")).toBe("5");
  });

  for (const [code, words] of [
    [432, "plan"],
    [433, "pay-as-you-go"],
  ] as const) {
    it(`${code} (Tavily's quota code): 429 insufficient_quota with x-should-retry: false, not retried`, async () => {
      up.script({ status: code });
      const { status, headers, body } = await search();
      expect(status).toBe(429);
      expect(headers.get("x-should-retry")).toBe("false");
      expect(headers.get("retry-after")).toBeNull();
      expect(errorOf(body)).toMatchObject({ code: "upstream_rate_limited", type: "insufficient_quota" });
      expect(errorOf(body).message).toContain(words);
      expect(up.requests).toHaveLength(1);
    });
  }

  it("401 (our key refused): 502, and the message blames the gateway's credentials, not the caller", async () => {
    up.script({ status: 401 });
    const { status, body } = await search();
    expect(status).toBe(502);
    expect(errorOf(body)).toMatchObject({ code: "upstream_error", message: "The web tool provider refused the gateway's credentials" });
    expect(up.requests).toHaveLength(1);
  });

  it("403 on a search: 502 (only crawl and map use 403 for an unsupported URL)", async () => {
    up.script({ status: 403 });
    expect((await search()).status).toBe(502);
  });

  it("500 then success: retried once, the caller sees the answer", async () => {
    up.script({ status: 500 });
    const { status, body } = await search();
    expect(status).toBe(200);
    expect(body.query).toBe("errors");
    expect(up.requests).toHaveLength(2);
  });

  it("5xx twice: 502 after the one retry", async () => {
    up.script({ status: 500 }, { status: 503 });
    const { status, body } = await search();
    expect(status).toBe(502);
    expect(errorOf(body)).toMatchObject({ code: "upstream_error", type: "server_error" });
    expect(up.requests).toHaveLength(2);
  });

  it("no answer within the provider's timeout: 504, not retried", async () => {
    up.script({ hang: true });
    const started = Date.now();
    const { status, body } = await search();
    expect(status).toBe(504);
    expect(errorOf(body).code).toBe("upstream_timeout");
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(up.requests).toHaveLength(1);
  });

  it("an answer that is not JSON, or lacks results: 502", async () => {
    up.script({ body: "<html>oops</html>" }, { body: "<html>oops</html>" });
    expect((await search()).status).toBe(502);
    up.script({ body: { query: "x" } }, { body: { query: "x" } });
    expect(errorOf((await search()).body).message).toBe("The web tool provider sent a malformed answer");
  });

  it("400 from Tavily: the caller's 400 with Tavily's message", async () => {
    up.script({ status: 400, body: { detail: { error: "Invalid topic. Must be 'general' or 'news'." } } });
    const { status, body } = await search();
    expect(status).toBe(400);
    expect(errorOf(body)).toMatchObject({ code: "invalid_request", message: "Invalid topic. Must be 'general' or 'news'." });
  });
});

describe("webtoolHttpError", () => {
  it("when a research read is 404, then not_found; 408 and 504 are time-outs; other 4xx keep their status", () => {
    expect(webtoolHttpError("research-read", 404, {}, "{}")).toMatchObject({ code: "not_found", status: 404 });
    expect(webtoolHttpError("search", 504, {}, "")).toMatchObject({ code: "upstream_timeout", status: 504 });
    expect(webtoolHttpError("search", 408, {}, "")).toMatchObject({ code: "upstream_timeout", status: 504 });
    expect(webtoolHttpError("extract", 422, {}, '{"detail":"bad urls"}')).toMatchObject({ code: "invalid_request", status: 422, message: "bad urls" });
    expect(webtoolHttpError("map", 403, {}, "")).toMatchObject({ status: 400, param: "url" });
  });
});
