import { tavily } from "@tavily/core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSpecValidator, startSerpApiUpstream, startTavilyUpstream, type TavilyUpstream, type UpstreamEmulator } from "@gw/testkit";
import { newWorkspaceKey, startGatewayTarget, targetNames, testPlans, type GatewayTarget } from "./targets";

/**
 * The Tools API through ingress, once in the mesh and once in the embedded default: the official
 * `@tavily/core` client pointed at `<gateway>/v1/tools/webtool` with the platform key, plain HTTP for
 * the SerpAPI-style route, against the Tavily and SerpAPI emulators. Each upstream must see the
 * gateway's own credential only, and nothing at all when the gateway refuses a call.
 */
const TAVILY_KEY = "tvly-e2e-platform-credential";
const SERPAPI_KEY = "serpapi-e2e-platform-credential";
const tavilySpec = createSpecValidator("tavily-openapi.json", "Tavily");

const config = (tavilyUrl: string, serpUrl: string) => `
providers:
  webtool:  { kind: tavily,  base_url: "${tavilyUrl}", api_key_env: E2E_TAVILY_KEY,  timeout_ms: 2000, max_retries: 1 }
  serptool: { kind: serpapi, base_url: "${serpUrl}",   api_key_env: E2E_SERPAPI_KEY, timeout_ms: 2000, max_retries: 0 }
${testPlans}`;

type ErrorBody = { error: { message: string; type: string; param: string | null; code: string } };

for (const targetName of targetNames) {
  describe(`the Tools API through ${targetName}`, () => {
    let tav: TavilyUpstream;
    let serp: UpstreamEmulator;
    let gw: GatewayTarget;
    /** Both tools (the default), serptool only (workspace), webtool only (key), and 3 requests a minute. */
    let keys: Record<"all" | "serpOnly" | "webOnly" | "limited", string>;

    beforeAll(async () => {
      tav = await startTavilyUpstream({ apiKey: TAVILY_KEY, alwaysReportUsage: true });
      serp = await startSerpApiUpstream({ apiKey: SERPAPI_KEY });
      gw = await startGatewayTarget(targetName, config(tav.url, serp.url), { E2E_TAVILY_KEY: TAVILY_KEY, E2E_SERPAPI_KEY: SERPAPI_KEY });
      keys = {
        all: (await newWorkspaceKey(gw, { name: "tools-all" })).key,
        serpOnly: (await newWorkspaceKey(gw, { name: "tools-serp", tools: ["serptool"] })).key,
        webOnly: (await newWorkspaceKey(gw, { name: "tools-narrow-key" }, { tools: ["webtool"] })).key,
        limited: (await newWorkspaceKey(gw, { name: "tools-limited", limits: { requests_per_minute: 3 } })).key,
      };
    }, 180_000);

    afterAll(async () => {
      await gw?.stop();
      await tav?.close();
      await serp?.close();
    });

    beforeEach(() => {
      tav.reset();
      serp.reset();
    });

    const client = (key = keys.all) => tavily({ apiKey: key, apiBaseURL: `${gw.baseURL}/tools/webtool` });
    const post = async (path: string, body: unknown, key = keys.all) => {
      const res = await fetch(`${gw.baseURL}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
    };
    const serpSearch = async (qs: string, key = keys.all) => {
      const res = await fetch(`${gw.baseURL}/tools/serptool/search?${qs}`, { headers: { authorization: `Bearer ${key}` } });
      return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
    };
    /** Every request the upstream saw carried the gateway's credential and none of the caller's keys. */
    const sawOnlyGatewayCredential = (up: UpstreamEmulator, check: (seen: UpstreamEmulator["requests"][number]) => void) => {
      expect(up.requests.length).toBeGreaterThan(0);
      for (const seen of up.requests) {
        check(seen);
        const everything = JSON.stringify([seen.headers, seen.query, seen.body]);
        for (const key of Object.values(keys)) expect(everything).not.toContain(key);
      }
    };

    it("when @tavily/core searches, extracts, crawls and maps with the platform key, then each works and Tavily saw only the gateway's credential", async () => {
      const tvly = client();
      const found = await tvly.search("Who is Leo Messi?", { maxResults: 3, includeAnswer: true, includeImages: true, includeUsage: true });
      expect(found.results).toHaveLength(3);
      expect(found.results[0]).toMatchObject({ url: expect.stringMatching(/^https:\/\//), title: expect.any(String), score: expect.any(Number) });
      expect(typeof found.answer).toBe("string");
      expect(found.images).toHaveLength(1);
      expect(found.usage).toBeUndefined();

      const extracted = await tvly.extract(["https://a.example.com/page", "https://unreachable.example/"], { includeUsage: true, format: "text" });
      expect(extracted.results.map((r) => r.url)).toEqual(["https://a.example.com/page"]);
      expect(extracted.results[0]!.rawContent).toContain("The content of https://a.example.com/page");
      expect(extracted.failedResults.map((r) => r.url)).toEqual(["https://unreachable.example/"]);
      expect(extracted.usage).toBeUndefined();

      const crawled = await tvly.crawl("docs.example.com", { limit: 3, instructions: "SDK pages", extractDepth: "basic" });
      expect(crawled.baseUrl).toBe("docs.example.com");
      expect(crawled.results.map((r) => r.url)).toEqual(["https://docs.example.com", "https://docs.example.com/page-1", "https://docs.example.com/page-2"]);
      expect(crawled.usage).toBeUndefined();

      const mapped = await tvly.map("docs.example.com", { limit: 4 });
      expect(mapped.results).toEqual([
        "https://docs.example.com",
        "https://docs.example.com/page-1",
        "https://docs.example.com/page-2",
        "https://docs.example.com/page-3",
      ]);

      expect(tav.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /search", "POST /extract", "POST /crawl", "POST /map"]);
      sawOnlyGatewayCredential(tav, (seen) => {
        expect(seen.headers.authorization).toBe(`Bearer ${TAVILY_KEY}`);
        expect(seen.body).not.toHaveProperty("include_usage");
      });
      expect(tav.requests[0]!.body).toMatchObject({ query: "Who is Leo Messi?", max_results: 3, include_answer: true, include_images: true });
    });

    it("when search is called over HTTP, then the answer is Tavily's (valid against its OpenAPI) with the gateway's headers and no usage", async () => {
      const { status, headers, body } = await post("/tools/webtool/search", {
        query: "spec check",
        include_answer: "basic",
        include_raw_content: true,
        include_usage: true,
      });
      expect(status).toBe(200);
      tavilySpec.assert("POST /search 200", body);
      expect(body).not.toHaveProperty("usage");
      expect(headers.get("x-request-id")).toMatch(/^req_/);
      expect(headers.get("x-ratelimit-limit-requests")).toBe("600");
    });

    it("when the caller sends api_key (body, query, or through @tavily/core), then 400 says not to and Tavily sees nothing", async () => {
      const inBody = await post("/tools/webtool/search", { query: "x", api_key: "tvly-callers-own" });
      expect(inBody.status).toBe(400);
      expect((inBody.body as ErrorBody).error).toMatchObject({
        param: "api_key",
        code: "invalid_request",
        message: expect.stringContaining("Do not send `api_key`"),
      });
      expect((await post("/tools/webtool/extract?api_key=tvly-x", { urls: "https://a.com" })).status).toBe(400);
      // @tavily/core passes unknown options through; it reports our envelope's message (as a
      // TavilyKeylessLimitError, since it reads any `error.code` string as its keyless envelope).
      await expect(client().search("x", { apiKey: "tvly-callers-own" } as never)).rejects.toThrow(/Do not send `apiKey`/);
      expect(tav.requests).toHaveLength(0);
    });

    it("when max_results or limit is over the bound, then 400 names it and Tavily sees nothing", async () => {
      const search = await post("/tools/webtool/search", { query: "x", max_results: 21 });
      expect(search.status).toBe(400);
      expect((search.body as ErrorBody).error).toMatchObject({ param: "max_results", message: expect.stringContaining("at most 20") });
      const crawl = await post("/tools/webtool/crawl", { url: "a.com", limit: 101 });
      expect((crawl.body as ErrorBody).error).toMatchObject({ param: "limit", message: expect.stringContaining("at most 100") });
      await expect(client().map("a.com", { limit: 501 })).rejects.toThrow(/limit must be at most 500/);
      expect(tav.requests).toHaveLength(0);
    });

    it("when the workspace or the key lacks the tool, then 403 tool_not_allowed and no upstream sees the call", async () => {
      const web = await post("/tools/webtool/search", { query: "x" }, keys.serpOnly);
      expect(web.status).toBe(403);
      expect((web.body as ErrorBody).error).toMatchObject({ code: "tool_not_allowed", type: "permission_error" });
      await expect(client(keys.serpOnly).search("x")).rejects.toThrow(/`webtool` is not enabled/);
      const serpDenied = await serpSearch("q=x", keys.webOnly);
      expect(serpDenied.status).toBe(403);
      expect((serpDenied.body as ErrorBody).error.code).toBe("tool_not_allowed");
      expect(tav.requests).toHaveLength(0);
      expect(serp.requests).toHaveLength(0);
      expect((await serpSearch("q=x", keys.serpOnly)).status).toBe(200);
      expect((await client(keys.webOnly).search("allowed")).results.length).toBe(5);
    });

    it("when Tavily answers 429, 432, 433, 5xx or nothing, then the caller gets 429 with retry-after, 429 insufficient_quota, 502 and 504", async () => {
      tav.script({ status: 429, headers: { "retry-after": "7" } });
      const limited = await post("/tools/webtool/search", { query: "x" });
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).toBe("7");
      expect((limited.body as ErrorBody).error.code).toBe("upstream_rate_limited");

      for (const code of [432, 433]) {
        tav.script({ status: code });
        const quota = await post("/tools/webtool/extract", { urls: "https://a.com" });
        expect(quota.status).toBe(429);
        expect(quota.headers.get("x-should-retry")).toBe("false");
        expect((quota.body as ErrorBody).error.type).toBe("insufficient_quota");
      }

      tav.script({ status: 500 }, { status: 502 });
      const failed = await post("/tools/webtool/crawl", { url: "a.com" });
      expect(failed.status).toBe(502);
      expect((failed.body as ErrorBody).error.code).toBe("upstream_error");

      tav.script({ hang: true });
      const slow = await post("/tools/webtool/search", { query: "x" });
      expect(slow.status).toBe(504);
      expect((slow.body as ErrorBody).error.code).toBe("upstream_timeout");
      expect(tav.requests).toHaveLength(6);
    });

    it("when serptool searches, then SerpAPI got the gateway's api_key and the caller gets SerpAPI's answer without the account's archive links", async () => {
      const { status, body } = await serpSearch("q=coffee&engine=google&num=3&hl=en");
      expect(status).toBe(200);
      expect((body.organic_results as unknown[]).length).toBe(3);
      expect(body.search_parameters).toMatchObject({ q: "coffee", engine: "google", hl: "en" });
      const metadata = body.search_metadata as Record<string, unknown>;
      expect(metadata.status).toBe("Success");
      for (const field of ["id", "json_endpoint", "raw_html_file", "prettify_html_file"]) expect(metadata).not.toHaveProperty(field);
      sawOnlyGatewayCredential(serp, (seen) => expect(seen.query.api_key).toBe(SERPAPI_KEY));
      expect(serp.requests[0]).toMatchObject({ path: "/search.json", query: { q: "coffee", engine: "google", num: "3", hl: "en" } });
    });

    it("when serptool gets api_key, num over 100, or SerpAPI runs out of searches, then 400, 400 and 429 insufficient_quota", async () => {
      const credential = await serpSearch("q=x&api_key=mine");
      expect(credential.status).toBe(400);
      expect((credential.body as ErrorBody).error.param).toBe("api_key");
      expect(((await serpSearch("q=x&num=101")).body as ErrorBody).error.param).toBe("num");
      expect(serp.requests).toHaveLength(0);
      serp.script({ status: 429 });
      const quota = await serpSearch("q=x");
      expect(quota.status).toBe(429);
      expect((quota.body as ErrorBody).error.type).toBe("insufficient_quota");
    });

    it("when tool calls exceed the requests-per-minute limit, then they are refused with 429 before any upstream", async () => {
      const tvly = client(keys.limited);
      await tvly.search("one");
      expect((await serpSearch("q=two", keys.limited)).status).toBe(200);
      await tvly.map("three.example.com");
      const over = await post("/tools/webtool/search", { query: "four" }, keys.limited);
      expect(over.status).toBe(429);
      expect((over.body as ErrorBody).error.code).toBe("rate_limit_exceeded");
      expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(tav.requests).toHaveLength(2);
      expect(serp.requests).toHaveLength(1);
    });
  });
}
