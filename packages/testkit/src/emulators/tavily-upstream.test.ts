import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSpecValidator } from "../openapi/validate";
import { pageContent, startTavilyUpstream, type TavilyUpstream } from "./tavily-upstream";

const KEY = "tvly-emulator-test-key";
const tavilySpec = createSpecValidator("tavily-openapi.json", "Tavily");
let up: TavilyUpstream;

beforeAll(async () => {
  up = await startTavilyUpstream({ apiKey: KEY, sitePages: 6 });
});
afterEach(() => up.reset());
afterAll(() => up.close());

async function call(method: "GET" | "POST", path: string, body?: unknown, auth: string | null = `Bearer ${KEY}`) {
  const res = await fetch(`${up.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(auth ? { authorization: auth } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}
const post = (path: string, body: unknown, auth?: string | null) => call("POST", path, body, auth);

describe("tavily emulator: auth and errors", () => {
  it("when the Bearer key is missing or wrong, then 401 with Tavily's detail.error", async () => {
    for (const auth of [null, "Bearer tvly-wrong"]) {
      expect(await post("/search", { query: "x" }, auth)).toMatchObject({
        status: 401,
        body: { detail: { error: "Unauthorized: missing or invalid API key." } },
      });
    }
  });

  it("when 429, 432, 433 and 500 are scripted without a body, then each carries Tavily's own message", async () => {
    up.script({ status: 429, headers: { "retry-after": "7" } }, { status: 432 }, { status: 433 }, { status: 500 });
    const r429 = await post("/search", { query: "x" });
    expect(r429.status).toBe(429);
    expect(r429.headers.get("retry-after")).toBe("7");
    expect((r429.body.detail as { error: string }).error).toMatch(/excessive requests/);
    expect(await post("/search", { query: "x" })).toMatchObject({
      status: 432,
      body: { detail: { error: expect.stringContaining("plan's set usage limit") } },
    });
    expect(await post("/search", { query: "x" })).toMatchObject({ status: 433, body: { detail: { error: expect.stringContaining("pay-as-you-go") } } });
    expect(await post("/search", { query: "x" })).toMatchObject({ status: 500, body: { detail: { error: "Internal Server Error" } } });
  });

  it("when the body is invalid, then 400 in Tavily's envelope", async () => {
    expect(await post("/search", { query: "" })).toMatchObject({ status: 400, body: { detail: { error: expect.stringContaining("Query") } } });
    expect(await post("/search", { query: "x", max_results: 21 })).toMatchObject({
      status: 400,
      body: { detail: { error: expect.stringContaining("max_results") } },
    });
    expect((await post("/extract", { urls: Array.from({ length: 21 }, (_, i) => `https://e.com/${i}`) })).status).toBe(400);
  });
});

describe("tavily emulator: POST /search", () => {
  it("when a search asks for answer, described images and favicons, then the answer matches Tavily's schema and is deterministic", async () => {
    const request = {
      query: "Who is Leo Messi?",
      max_results: 3,
      include_answer: true,
      include_images: true,
      include_image_descriptions: true,
      include_favicon: true,
      include_raw_content: "markdown",
    };
    const { status, body } = await post("/search", request);
    expect(status).toBe(200);
    tavilySpec.assert("POST /search 200", body);
    expect(body.query).toBe(request.query);
    expect(typeof body.answer).toBe("string");
    const results = body.results as { url: string; raw_content: string; favicon: string; score: number; images: unknown[] }[];
    expect(results).toHaveLength(3);
    expect(results[0]!.raw_content).toBe(pageContent(results[0]!.url));
    expect(results[0]!.favicon).toMatch(/favicon\.ico$/);
    expect(results[0]!.score).toBeGreaterThan(results[1]!.score);
    expect(body.images).toHaveLength(1);
    expect(body).not.toHaveProperty("usage");
    expect((await post("/search", request)).body.results).toEqual(results);
  });

  it("when images are asked for without descriptions, then they are plain URL strings, as the real API sends them (the schema says objects)", async () => {
    const { body } = await post("/search", { query: "cats", max_results: 1, include_images: true });
    expect(body.images).toEqual(["https://images.example.com/cats.png"]);
    expect((body.results as { images: unknown[] }[])[0]!.images).toEqual([expect.stringMatching(/^https:\/\/.+\.png$/)]);
  });

  it("when include_domains and exclude_domains are given, then results come from the allowed domains only", async () => {
    const { body } = await post("/search", { query: "ai", include_domains: ["a.com", "b.com", "c.com"], exclude_domains: ["b.com"], max_results: 4 });
    const hosts = (body.results as { url: string }[]).map((r) => new URL(r.url).host);
    expect(hosts).toEqual(["a.com", "c.com", "a.com", "c.com"]);
  });

  it("when include_usage is sent, then usage.credits is reported (advanced costs 2); by default there is none", async () => {
    expect((await post("/search", { query: "x", include_usage: true, search_depth: "advanced" })).body.usage).toEqual({ credits: 2 });
    expect((await post("/search", { query: "x" })).body).not.toHaveProperty("usage");
    expect((await post("/search", { query: "x", max_results: 0 })).body.results).toEqual([]);
  });

  it("when requests arrive, then they are recorded with the Bearer key and body", async () => {
    await post("/search", { query: "recorded" });
    expect(up.requests[0]).toMatchObject({ method: "POST", path: "/search", body: { query: "recorded" } });
    expect(up.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });
});

describe("tavily emulator: POST /extract, /crawl, /map", () => {
  it("when URLs are extracted, then reachable ones are results and the others failed_results", async () => {
    const { status, body } = await post("/extract", {
      urls: ["https://a.com/x", "not a url", "https://unreachable.example/"],
      include_usage: true,
      format: "text",
    });
    expect(status).toBe(200);
    tavilySpec.assert("POST /extract 200", body);
    expect(body.results).toEqual([{ url: "https://a.com/x", raw_content: pageContent("https://a.com/x", "text"), images: [] }]);
    expect((body.failed_results as { url: string }[]).map((f) => f.url)).toEqual(["not a url", "https://unreachable.example/"]);
    expect(body.usage).toEqual({ credits: 1 });
  });

  it("when a single URL is extracted with a query, then raw_content is the reranked chunks", async () => {
    const { body } = await post("/extract", { urls: "https://a.com/", query: "pricing", chunks_per_source: 2 });
    expect((body.results as { raw_content: string }[])[0]!.raw_content).toBe(
      "Chunk 1 of https://a.com/ about pricing [...] Chunk 2 of https://a.com/ about pricing",
    );
  });

  it("when a site is crawled, then the pages found (up to limit) come back with content and the base_url", async () => {
    const { status, body } = await post("/crawl", { url: "docs.example.com", limit: 4 });
    expect(status).toBe(200);
    tavilySpec.assert("POST /crawl 200", body);
    expect(body.base_url).toBe("docs.example.com");
    expect((body.results as { url: string }[]).map((r) => r.url)).toEqual([
      "https://docs.example.com",
      "https://docs.example.com/page-1",
      "https://docs.example.com/page-2",
      "https://docs.example.com/page-3",
    ]);
    expect((await post("/crawl", { url: "https://docs.example.com" })).body.results).toHaveLength(6);
  });

  it("when a site is mapped, then the results are plain URL strings, filtered by select_paths", async () => {
    const { body } = await post("/map", { url: "https://docs.example.com", select_paths: ["/page-[12]$"] });
    tavilySpec.assert("POST /map 200", body);
    expect(body.results).toEqual(["https://docs.example.com/page-1", "https://docs.example.com/page-2"]);
  });

  it("when the site is not supported, then 403 as Tavily answers it", async () => {
    expect(await post("/crawl", { url: "https://x.unsupported" })).toMatchObject({ status: 403, body: { detail: { error: "URL is not supported" } } });
  });
});

describe("tavily emulator: research", () => {
  it("when a task is started and polled, then pending → in_progress (202) → completed (200) with content and sources", async () => {
    const started = await post("/research", { input: "What is new in AI?", model: "mini" });
    expect(started.status).toBe(200);
    tavilySpec.assert("POST /research 201", started.body);
    expect(started.body).toMatchObject({ status: "pending", input: "What is new in AI?", model: "mini" });
    const id = started.body.request_id as string;
    const first = await call("GET", `/research/${id}`);
    expect(first.status).toBe(202);
    tavilySpec.assert("GET /research/{request_id} 202", first.body);
    expect(first.body.status).toBe("pending");
    expect((await call("GET", `/research/${id}`)).body.status).toBe("in_progress");
    const done = await call("GET", `/research/${id}?include_usage=true`);
    expect(done.status).toBe(200);
    tavilySpec.assert("ResearchTaskCompleted", { ...done.body, usage: undefined });
    expect(done.body).toMatchObject({ request_id: id, status: "completed", usage: { credits: 10 } });
    expect(done.body.content).toContain("What is new in AI?");
    expect(done.body.sources).toHaveLength(2);
    expect(up.researchTasks.get(id)?.polls).toBe(3);
  });

  it("when an output_schema is given, then content is an object of that shape", async () => {
    up.setResearchOptions({ pendingPolls: 0, inProgressPolls: 0 });
    const { body } = await post("/research", {
      input: "Company X",
      output_schema: { properties: { summary: { type: "string" }, founded: { type: "integer" } }, required: ["summary"] },
    });
    const done = await call("GET", `/research/${body.request_id as string}`);
    expect(done.body.content).toEqual({ summary: "Findings on Company X", founded: "Findings on Company X".length });
  });

  it("when a failure is scripted (by input or failNextResearch), then the task ends failed", async () => {
    up.setResearchOptions({ pendingPolls: 0, inProgressPolls: 0 });
    const byInput = await post("/research", { input: "please [fail]" });
    const failed = await call("GET", `/research/${byInput.body.request_id as string}`);
    expect(failed).toMatchObject({ status: 200, body: { status: "failed" } });
    tavilySpec.assert("ResearchTaskFailed", failed.body);
    up.failNextResearch();
    const next = await post("/research", { input: "ordinary" });
    expect((await call("GET", `/research/${next.body.request_id as string}`)).body.status).toBe("failed");
    const after = await post("/research", { input: "ordinary" });
    expect((await call("GET", `/research/${after.body.request_id as string}`)).body.status).toBe("completed");
  });

  it("when a minimum duration is set, then the task stays in_progress until it has passed", async () => {
    up.setResearchOptions({ pendingPolls: 0, inProgressPolls: 0, minDurationMs: 300 });
    const { body } = await post("/research", { input: "slow" });
    expect((await call("GET", `/research/${body.request_id as string}`)).body.status).toBe("in_progress");
    await new Promise((r) => setTimeout(r, 320));
    expect((await call("GET", `/research/${body.request_id as string}`)).body.status).toBe("completed");
  });

  it("when the id is unknown or the input missing, then 404 and 400", async () => {
    expect(await call("GET", "/research/nope")).toMatchObject({ status: 404, body: { detail: { error: "Research task not found" } } });
    expect((await post("/research", { model: "mini" })).status).toBe(400);
    expect((await post("/research", { input: "x", model: "huge" })).status).toBe(400);
  });
});
