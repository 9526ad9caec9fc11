import { SERPAPI_THROUGHPUT_ERROR, startSerpApiUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startToolRouteTestService, type ToolRouteTestService } from "../route-test-service";

const KEY = "serpapi-route-test-key-0123456789";
let up: UpstreamEmulator;
let service: ToolRouteTestService;

beforeAll(async () => {
  up = await startSerpApiUpstream({ apiKey: KEY });
  service = await startToolRouteTestService({ upstreams: { serptool: { kind: "serpapi", url: up.url, key: KEY, timeoutMs: 400 } } });
});
afterAll(async () => {
  await service?.stop();
  await up?.close();
});
beforeEach(() => up.reset());

const search = (qs: string) => service.get(`/v1/tools/serptool/search?${qs}`);
const errorOf = (body: Record<string, unknown>) => body.error as { message: string; type: string; param: string | null; code: string };

describe("GET /v1/tools/serptool/search", () => {
  it("when q, engine and other SerpAPI parameters are sent, then they reach /search.json with the gateway's api_key, and the answer keeps SerpAPI's shape", async () => {
    const { status, body } = await search("q=coffee&engine=google&num=3&hl=en&gl=us&location=Austin%2C+Texas");
    expect(status).toBe(200);
    expect(up.requests).toHaveLength(1);
    const seen = up.requests[0]!;
    expect(seen.path).toBe("/search.json");
    expect(seen.query).toEqual({ q: "coffee", engine: "google", num: "3", hl: "en", gl: "us", location: "Austin, Texas", api_key: KEY });
    expect(seen.headers).not.toHaveProperty("authorization");
    expect(body.search_parameters).toMatchObject({ engine: "google", q: "coffee", hl: "en" });
    expect((body.organic_results as unknown[]).length).toBe(3);
    expect(body.search_information).toMatchObject({ organic_results_state: "Results for exact spelling" });
  });

  it("when the answer carries the account's archive links, then they are removed and the rest of search_metadata stays", async () => {
    const { body } = await search("q=tea");
    const metadata = body.search_metadata as Record<string, unknown>;
    expect(metadata).toMatchObject({ status: "Success", google_url: expect.stringContaining("q=tea"), total_time_taken: 1.01 });
    for (const field of ["id", "json_endpoint", "raw_html_file", "prettify_html_file"]) expect(metadata).not.toHaveProperty(field);
    expect(JSON.stringify(body)).not.toContain(KEY);
  });

  it("when the provider ever echoed the key or account fields, then they never reach the caller", async () => {
    up.script({
      body: {
        search_metadata: { id: "x", status: "Success", json_endpoint: "https://serpapi.com/searches/x.json" },
        search_parameters: { engine: "google", q: "x", api_key: KEY },
        organic_results: [{ position: 1, link: `https://serpapi.com/search.json?q=x&api_key=${KEY}` }],
        plan_searches_left: 12,
        this_month_usage: 88,
      },
    });
    const { status, body } = await search("q=x");
    expect(status).toBe(200);
    expect(body).not.toHaveProperty("plan_searches_left");
    expect(body).not.toHaveProperty("this_month_usage");
    expect(body.search_parameters).toEqual({ engine: "google", q: "x" });
    expect(JSON.stringify(body)).not.toContain(KEY);
    expect((body.organic_results as { link: string }[])[0]!.link).toBe("https://serpapi.com/search.json?q=x&api_key=[redacted]");
  });

  it("when another engine is used, then its own query parameter passes through", async () => {
    const { status, body } = await search("engine=youtube&search_query=lofi&num=2");
    expect(status).toBe(200);
    expect(body.organic_results).toHaveLength(2);
  });

  it("when the search has no results, then SerpAPI's 200 with a top-level error passes through", async () => {
    const { status, body } = await search("q=no+results+at+all");
    expect(status).toBe(200);
    expect(body.error).toBe("Google hasn't returned any results for this query.");
  });

  it("when api_key or another credential parameter is sent, then 400 and nothing is forwarded", async () => {
    for (const param of ["api_key", "apiKey", "key", "token"]) {
      const { status, body } = await search(`q=x&${param}=caller-secret`);
      expect(status).toBe(400);
      expect(errorOf(body)).toMatchObject({ param, code: "invalid_request", message: expect.stringContaining(`Do not send \`${param}\` in the query`) });
    }
    expect(up.requests).toHaveLength(0);
  });

  it("when q is missing for Google, num is over 100, output is html, async is on or a parameter is repeated, then 400 names it", async () => {
    const cases: [string, string][] = [
      ["engine=google", "q"],
      ["", "q"],
      ["q=x&num=101", "num"],
      ["q=x&num=ten", "num"],
      ["q=x&start=-1", "start"],
      ["q=x&output=html", "output"],
      ["q=x&async=true", "async"],
      ["q=x&hl=en&hl=de", "hl"],
      ["q=x&engine=Google!", "engine"],
    ];
    for (const [qs, param] of cases) {
      const { status, body } = await search(qs);
      expect(status, qs).toBe(400);
      expect(errorOf(body).param, qs).toBe(param);
      expect(errorOf(body).message, qs).toMatch(/^Invalid query: /);
    }
    expect(up.requests).toHaveLength(0);
  });

  it("when num is 100, then it is accepted and organic_results are at most num", async () => {
    expect((await search("q=x&num=100")).body.organic_results).toHaveLength(100);
    up.script({ body: { organic_results: Array.from({ length: 30 }, (_, i) => ({ position: i + 1 })) } });
    expect((await search("q=x&num=10")).body.organic_results).toHaveLength(10);
  });

  it("when called with POST, then 405 with allow: GET", async () => {
    const { status, headers } = await service.post("/v1/tools/serptool/search", { q: "x" });
    expect(status).toBe(405);
    expect(headers.get("allow")).toBe("GET");
  });
});

describe("when SerpAPI fails", () => {
  it("then running out of searches is a 429 insufficient_quota that says not to retry", async () => {
    up.script({ status: 429 });
    const { status, headers, body } = await search("q=x");
    expect(status).toBe(429);
    expect(headers.get("x-should-retry")).toBe("false");
    expect(errorOf(body)).toMatchObject({ type: "insufficient_quota", code: "upstream_rate_limited" });
  });

  it("then the hourly throughput limit is a 429 with retry-after (the provider's, else 60 s)", async () => {
    up.script(
      { status: 429, body: { error: SERPAPI_THROUGHPUT_ERROR } },
      { status: 429, body: { error: SERPAPI_THROUGHPUT_ERROR }, headers: { "retry-after": "30" } },
    );
    const first = await search("q=x");
    expect(first.status).toBe(429);
    expect(first.headers.get("retry-after")).toBe("60");
    expect(errorOf(first.body)).toMatchObject({ type: "rate_limit_error", message: expect.stringContaining("throughput") });
    expect((await search("q=x")).headers.get("retry-after")).toBe("30");
  });

  it("then 401 is a 502, 503 a 502, a time-out a 504 and a 400 the caller's 400", async () => {
    up.script({ status: 401 });
    expect((await search("q=x")).status).toBe(502);
    up.script({ status: 503 });
    expect(errorOf((await search("q=x")).body)).toMatchObject({ code: "upstream_error", message: "The search-engine provider failed to answer (503)" });
    up.script({ hang: true });
    expect((await search("q=x")).status).toBe(504);
    up.script({ status: 400, body: { error: "Unsupported `gl` parameter." } });
    expect(await search("q=x&gl=zz")).toMatchObject({ status: 400, body: { error: { message: "Unsupported `gl` parameter." } } });
  });
});
