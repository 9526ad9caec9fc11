import { createSpecValidator, startTavilyUpstream, type TavilyUpstream } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startToolRouteTestService, type ToolRouteTestService } from "../route-test-service";

const KEY = "tvly-route-test-key";
const tavilySpec = createSpecValidator("tavily-openapi.json", "Tavily");

let up: TavilyUpstream;
let service: ToolRouteTestService;

beforeAll(async () => {
  up = await startTavilyUpstream({ apiKey: KEY, alwaysReportUsage: true });
  service = await startToolRouteTestService({ upstreams: { webtool: { kind: "tavily", url: up.url, key: KEY } } });
});
afterAll(async () => {
  await service?.stop();
  await up?.close();
});
beforeEach(() => up.reset());

const errorOf = (body: Record<string, unknown>) => body.error as { message: string; type: string; param: string | null; code: string };

describe("POST /v1/tools/webtool/search", () => {
  it("when a search is sent with documented and unknown options, then they reach Tavily with the gateway's key, and the answer keeps Tavily's shape", async () => {
    const request = {
      query: "Who is Leo Messi?",
      max_results: 3,
      search_depth: "advanced",
      include_answer: true,
      include_raw_content: "markdown",
      include_domains_mode: "prefer",
      a_future_option: { nested: true },
    };
    const { status, body, headers } = await service.post("/v1/tools/webtool/search", request, {
      "x-client-source": "tavily-js",
      "x-project-id": "caller-project",
      "x-tavily-orgid": "caller-org",
    });
    expect(status).toBe(200);
    expect(headers.get("content-type")).toMatch(/application\/json/);
    tavilySpec.assert("POST /search 200", body);
    expect(body.query).toBe(request.query);
    expect(body.results).toHaveLength(3);
    expect(typeof body.answer).toBe("string");
    expect(up.requests).toHaveLength(1);
    const seen = up.requests[0]!;
    expect(seen.path).toBe("/search");
    expect(seen.body).toEqual(request);
    expect(seen.headers.authorization).toBe(`Bearer ${KEY}`);
    // The caller's own Tavily headers (project, organisation) never select anything on our account.
    expect(seen.headers).not.toHaveProperty("x-project-id");
    expect(seen.headers).not.toHaveProperty("x-tavily-orgid");
    expect(seen.headers).not.toHaveProperty("x-gw-identity");
  });

  it("when the upstream reports usage (asked or not), then usage is removed, and include_usage is never forwarded", async () => {
    const { body } = await service.post("/v1/tools/webtool/search", { query: "credits", include_usage: true });
    expect(body).not.toHaveProperty("usage");
    expect(body).not.toHaveProperty("credits");
    expect(up.requests[0]!.body).toEqual({ query: "credits" });
    up.script({ body: { query: "q", images: [], results: [], response_time: 1, usage: { credits: 9 }, credits: 9 } });
    const scripted = await service.post("/v1/tools/webtool/search", { query: "q" });
    expect(scripted.status).toBe(200);
    expect(scripted.body).toEqual({ query: "q", images: [], results: [], response_time: 1 });
  });

  it("when max_results is above 20, below 0 or not a whole number, then 400 names it and nothing is forwarded", async () => {
    for (const max of [21, -1, 2.5, "5"]) {
      const { status, body } = await service.post("/v1/tools/webtool/search", { query: "x", max_results: max });
      expect(status).toBe(400);
      expect(errorOf(body)).toMatchObject({ param: "max_results", code: "invalid_request", type: "invalid_request_error" });
    }
    expect(errorOf((await service.post("/v1/tools/webtool/search", { query: "x", max_results: 21 })).body).message).toContain("at most 20");
    expect(up.requests).toHaveLength(0);
  });

  it("when the upstream returns more results than max_results (or than the default 5), then the answer is cut to the bound", async () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ url: `https://e.com/${i}`, title: `t${i}`, content: "c", score: 0.5 }));
    up.script({ body: { query: "x", images: [], results: many, response_time: 1 } }, { body: { query: "x", images: [], results: many, response_time: 1 } });
    expect((await service.post("/v1/tools/webtool/search", { query: "x", max_results: 2 })).body.results).toEqual(many.slice(0, 2));
    expect((await service.post("/v1/tools/webtool/search", { query: "x" })).body.results).toHaveLength(5);
  });

  it("when the query is missing or empty, then 400 names query", async () => {
    for (const body of [{}, { query: "  " }, { query: 5 }]) {
      const answer = await service.post("/v1/tools/webtool/search", body);
      expect(answer.status).toBe(400);
      expect(errorOf(answer.body).param).toBe("query");
    }
  });
});

describe("credential fields", () => {
  for (const field of ["api_key", "apiKey", "API-KEY", "token", "authorization", "tavily_api_key"]) {
    it(`when the body carries ${field}, then 400 says not to send it and nothing is forwarded`, async () => {
      const { status, body } = await service.post("/v1/tools/webtool/search", { query: "x", [field]: "tvly-callers-own-key" });
      expect(status).toBe(400);
      expect(errorOf(body)).toMatchObject({ param: field, code: "invalid_request" });
      expect(errorOf(body).message).toMatch(new RegExp(`Do not send \`${field}\``));
      expect(up.requests).toHaveLength(0);
    });
  }

  it("when the query string carries api_key, then 400 too, on every webtool route", async () => {
    for (const route of ["search", "extract", "crawl", "map"]) {
      const { status, body } = await service.post(`/v1/tools/webtool/${route}?api_key=tvly-x`, { query: "x", urls: "https://a.com", url: "https://a.com" });
      expect(status).toBe(400);
      expect(errorOf(body).param).toBe("api_key");
    }
    expect(up.requests).toHaveLength(0);
  });

  it("when a credential is sent together with an invalid body, then the credential is what the 400 names", async () => {
    const { body } = await service.post("/v1/tools/webtool/extract", { api_key: "k" });
    expect(errorOf(body).param).toBe("api_key");
  });
});

describe("POST /v1/tools/webtool/extract", () => {
  it("when one URL or a list is extracted, then results and failed_results come back without usage", async () => {
    const one = await service.post("/v1/tools/webtool/extract", { urls: "https://a.com/page", format: "text", extract_depth: "advanced" });
    expect(one.status).toBe(200);
    tavilySpec.assert("POST /extract 200", one.body);
    expect((one.body.results as { url: string }[]).map((r) => r.url)).toEqual(["https://a.com/page"]);
    expect(one.body).not.toHaveProperty("usage");
    const list = await service.post("/v1/tools/webtool/extract", { urls: ["https://a.com/1", "https://unreachable.example/"] });
    expect((list.body.failed_results as { url: string }[]).map((r) => r.url)).toEqual(["https://unreachable.example/"]);
    expect(up.requests.map((r) => r.body)).toEqual([
      { urls: "https://a.com/page", format: "text", extract_depth: "advanced" },
      { urls: ["https://a.com/1", "https://unreachable.example/"] },
    ]);
  });

  it("when more than 20 URLs, none, or a bad extract_depth are sent, then 400 names the field", async () => {
    const urls = Array.from({ length: 21 }, (_, i) => `https://a.com/${i}`);
    expect(errorOf((await service.post("/v1/tools/webtool/extract", { urls })).body)).toMatchObject({
      param: "urls",
      message: expect.stringContaining("at most 20"),
    });
    expect(errorOf((await service.post("/v1/tools/webtool/extract", { urls: [] })).body).param).toBe("urls");
    expect(errorOf((await service.post("/v1/tools/webtool/extract", { urls: "https://a.com", extract_depth: "deep" })).body).param).toBe("extract_depth");
    expect(errorOf((await service.post("/v1/tools/webtool/extract", { urls: "https://a.com", timeout: 61 })).body).param).toBe("timeout");
    expect(up.requests).toHaveLength(0);
  });
});

describe("POST /v1/tools/webtool/crawl and /map", () => {
  it("when a site is crawled with limit, instructions and extract_depth, then at most limit pages come back", async () => {
    const { status, body } = await service.post("/v1/tools/webtool/crawl", {
      url: "docs.example.com",
      limit: 3,
      instructions: "SDK pages",
      extract_depth: "basic",
    });
    expect(status).toBe(200);
    tavilySpec.assert("POST /crawl 200", body);
    expect(body.base_url).toBe("docs.example.com");
    expect(body.results).toHaveLength(3);
    expect(body).not.toHaveProperty("usage");
    expect(up.requests[0]!.body).toEqual({ url: "docs.example.com", limit: 3, instructions: "SDK pages", extract_depth: "basic" });
  });

  it("when a site is mapped, then the results are URL strings", async () => {
    const { status, body } = await service.post("/v1/tools/webtool/map", { url: "https://docs.example.com", limit: 2 });
    expect(status).toBe(200);
    tavilySpec.assert("POST /map 200", body);
    expect(body.results).toEqual(["https://docs.example.com", "https://docs.example.com/page-1"]);
  });

  it("when limit is over the gateway's bound (crawl 100, map 500) or max_depth over 5, then 400 names it", async () => {
    expect(errorOf((await service.post("/v1/tools/webtool/crawl", { url: "a.com", limit: 101 })).body)).toMatchObject({
      param: "limit",
      message: expect.stringContaining("at most 100"),
    });
    expect(errorOf((await service.post("/v1/tools/webtool/map", { url: "a.com", limit: 501 })).body)).toMatchObject({
      param: "limit",
      message: expect.stringContaining("at most 500"),
    });
    expect((await service.post("/v1/tools/webtool/map", { url: "a.com", limit: 500 })).status).toBe(200);
    expect(errorOf((await service.post("/v1/tools/webtool/crawl", { url: "a.com", max_depth: 6 })).body).param).toBe("max_depth");
    expect(errorOf((await service.post("/v1/tools/webtool/crawl", { limit: 5 })).body).param).toBe("url");
    expect(up.requests).toHaveLength(1);
  });

  it("when the upstream returns more pages than asked (or than the default 50), then the answer is cut", async () => {
    const pages = Array.from({ length: 60 }, (_, i) => `https://a.com/${i}`);
    up.script({ body: { base_url: "a.com", results: pages, response_time: 1 } }, { body: { base_url: "a.com", results: pages, response_time: 1 } });
    expect((await service.post("/v1/tools/webtool/map", { url: "a.com", limit: 7 })).body.results).toEqual(pages.slice(0, 7));
    expect((await service.post("/v1/tools/webtool/map", { url: "a.com" })).body.results).toHaveLength(50);
  });

  it("when Tavily answers 403 (URL not supported) to a crawl, then it is the caller's 400 naming url", async () => {
    const { status, body } = await service.post("/v1/tools/webtool/crawl", { url: "https://x.unsupported" });
    expect(status).toBe(400);
    expect(errorOf(body)).toMatchObject({ param: "url", message: "The URL is not supported: URL is not supported" });
  });
});

describe("methods and paths", () => {
  it("when a webtool route is called with GET, then 405 with allow: POST; an unknown operation is 404", async () => {
    const wrong = await service.get("/v1/tools/webtool/search?query=x");
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
    expect(errorOf(wrong.body).code).toBe("method_not_allowed");
    expect((await service.post("/v1/tools/webtool/feedback", {})).status).toBe(404);
    expect(up.requests).toHaveLength(0);
  });

  it("when a call does not come through ingress (no signed identity), then 401", async () => {
    const res = await fetch(`${service.url}/v1/tools/webtool/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"query":"x"}',
    });
    expect(res.status).toBe(401);
    expect(up.requests).toHaveLength(0);
  });

  it("when the body is not JSON, then 400", async () => {
    const { status, body } = await service.post("/v1/tools/webtool/search", "{not json");
    expect(status).toBe(400);
    expect(errorOf(body).message).toContain("not valid JSON");
  });
});
