import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startSerpApiUpstream } from "./serpapi-upstream";
import type { UpstreamEmulator } from "./http-emulator";

const KEY = "serpapi-emulator-key";
let up: UpstreamEmulator;

beforeAll(async () => {
  up = await startSerpApiUpstream({ apiKey: KEY });
});
afterEach(() => up.reset());
afterAll(() => up.close());

async function get(path: string, params: Record<string, string>, key: string | null = KEY) {
  const qs = new URLSearchParams({ ...params, ...(key === null ? {} : { api_key: key }) });
  const res = await fetch(`${up.url}${path}?${qs.toString()}`);
  const text = await res.text();
  return { status: res.status, type: res.headers.get("content-type"), text, body: text.startsWith("{") ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

describe("serpapi emulator", () => {
  it("when the api_key parameter is missing or wrong, then 401 with SerpAPI's error", async () => {
    for (const key of [null, "wrong"]) {
      expect(await get("/search.json", { q: "x" }, key)).toMatchObject({
        status: 401,
        body: { error: "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key" },
      });
    }
  });

  it("when Google is searched, then the answer has SerpAPI's envelope and num results from start", async () => {
    const { status, body } = await get("/search.json", { engine: "google", q: "coffee", num: "3", start: "10", hl: "en" });
    expect(status).toBe(200);
    expect(body.search_metadata).toMatchObject({
      status: "Success",
      json_endpoint: expect.stringMatching(/^https:\/\/serpapi\.com\/searches\/.+\.json$/),
      raw_html_file: expect.stringMatching(/\.html$/),
      google_url: expect.stringContaining("q=coffee"),
    });
    expect(body.search_parameters).toMatchObject({ engine: "google", q: "coffee", hl: "en", num: "3" });
    expect(body.search_parameters).not.toHaveProperty("api_key");
    const organic = body.organic_results as { position: number; link: string }[];
    expect(organic.map((r) => r.position)).toEqual([11, 12, 13]);
    expect((body.serpapi_pagination as { next: string }).next).toContain("start=13");
    expect(JSON.stringify(body)).not.toContain(KEY);
  });

  it("when /search is used (the npm SDK's path), then JSON by default and HTML with output=html", async () => {
    expect((await get("/search", { q: "tea" })).body.organic_results).toHaveLength(10);
    const html = await get("/search", { q: "tea", output: "html" });
    expect(html.type).toMatch(/text\/html/);
    expect(html.text).toContain("<h1>tea</h1>");
  });

  it("when other engines are searched, then their result keys and query parameter names apply", async () => {
    expect((await get("/search.json", { engine: "google_news", q: "ai" })).body.news_results).toHaveLength(10);
    expect((await get("/search.json", { engine: "google_images", q: "cats", num: "2" })).body.images_results).toHaveLength(2);
    expect((await get("/search.json", { engine: "youtube", search_query: "lofi", num: "1" })).body.organic_results).toHaveLength(1);
    expect(await get("/search.json", { engine: "youtube", q: "lofi" })).toMatchObject({
      status: 400,
      body: { error: "Missing query `search_query` parameter." },
    });
  });

  it("when q is missing or the query has no results, then 400, and 200 with a top-level error", async () => {
    expect(await get("/search.json", {})).toMatchObject({ status: 400, body: { error: "Missing query `q` parameter." } });
    const empty = await get("/search.json", { q: "no results here" });
    expect(empty).toMatchObject({
      status: 200,
      body: { error: "Google hasn't returned any results for this query.", search_information: { organic_results_state: "Fully empty" } },
    });
  });

  it("when 429 and 503 are scripted, then SerpAPI's messages come back", async () => {
    up.script({ status: 429 }, { status: 503 });
    expect(await get("/search.json", { q: "x" })).toMatchObject({ status: 429, body: { error: "Your account has run out of searches." } });
    expect(await get("/search.json", { q: "x" })).toMatchObject({ status: 503, body: { error: expect.stringContaining("couldn't get valid results") } });
    expect(up.requests.map((r) => r.query.api_key)).toEqual([KEY, KEY]);
  });
});
