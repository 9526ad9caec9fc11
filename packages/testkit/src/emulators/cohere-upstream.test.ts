import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startCohereUpstream } from "./cohere-upstream";
import type { UpstreamEmulator } from "./http-emulator";
import { embeddingVector } from "./synthetic";

const KEY = "co-test-key-123";
let up: UpstreamEmulator;

beforeAll(async () => {
  up = await startCohereUpstream({ apiKey: KEY });
});
afterEach(() => up.reset());
afterAll(() => up.close());

async function post(path: string, body: unknown, auth: string | null = `Bearer ${KEY}`) {
  const res = await fetch(`${up.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const embedBody = { model: "embed-v4.0", texts: ["hello world", "goodbye"], input_type: "search_document", embedding_types: ["float"] };

describe("cohere emulator: auth", () => {
  it("when the key is missing or wrong, then 401 with Cohere's {message} body", async () => {
    expect(await post("/v2/embed", embedBody, null)).toMatchObject({ status: 401, body: { message: "no api key supplied" } });
    expect(await post("/v2/embed", embedBody, "Bearer nope")).toMatchObject({ status: 401, body: { message: "invalid api token" } });
    expect(up.requests).toHaveLength(2);
  });

  it("when the scheme is written in lower case, then the key is still accepted", async () => {
    expect((await post("/v2/embed", embedBody, `bearer ${KEY}`)).status).toBe(200);
  });
});

describe("cohere emulator: POST /v2/embed", () => {
  it("when texts are embedded as float, then embeddings.float has one seeded vector per text and billed input tokens", async () => {
    const { status, body } = await post("/v2/embed", embedBody);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      texts: embedBody.texts,
      response_type: "embeddings_by_type",
      meta: { api_version: { version: "2" }, billed_units: { input_tokens: 3 } },
    });
    expect(typeof body.id).toBe("string");
    const floats = (body.embeddings as { float: number[][] }).float;
    expect(floats).toHaveLength(2);
    expect(floats[0]).toEqual(Array.from(embeddingVector("hello world", 1536)));
  });

  it("when output_dimension is one embed-v4 accepts, then the vectors have that width; another width is a 422", async () => {
    const ok = await post("/v2/embed", { ...embedBody, output_dimension: 256 });
    expect((ok.body.embeddings as { float: number[][] }).float[0]).toHaveLength(256);
    const bad = await post("/v2/embed", { ...embedBody, output_dimension: 300 });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toContain("output_dimension");
  });

  it("when a v3 model gets output_dimension, then 400; without it its vectors are 1024 wide", async () => {
    const v3 = { ...embedBody, model: "embed-english-v3.0" };
    expect((await post("/v2/embed", { ...v3, output_dimension: 256 })).status).toBe(400);
    expect(((await post("/v2/embed", v3)).body.embeddings as { float: number[][] }).float[0]).toHaveLength(1024);
  });

  it("when input_type is missing or more than 96 texts come, then 400 naming the problem", async () => {
    const noType = await post("/v2/embed", { model: "embed-v4.0", texts: ["a"] });
    expect(noType).toMatchObject({ status: 400, body: { message: expect.stringContaining("input_type") } });
    const tooMany = await post("/v2/embed", { ...embedBody, texts: Array.from({ length: 97 }, (_, i) => `t${i}`) });
    expect(tooMany).toMatchObject({ status: 400, body: { message: expect.stringContaining("96") } });
  });

  it("when int8 and float are both asked for, then both are keyed by type", async () => {
    const { body } = await post("/v2/embed", { ...embedBody, embedding_types: ["float", "int8"] });
    const embeddings = body.embeddings as Record<string, number[][]>;
    expect(Object.keys(embeddings).sort()).toEqual(["float", "int8"]);
    expect(embeddings.int8?.[0]?.every((x) => Number.isInteger(x) && x >= -128 && x <= 127)).toBe(true);
  });
});

describe("cohere emulator: POST /v2/rerank", () => {
  const documents = ["the cat sat", "dogs and cats and the mat", "a cat sat on the mat", "nothing here"];

  it("when documents are reranked, then results are indexes sorted by descending score, with search units billed", async () => {
    const { status, body } = await post("/v2/rerank", { model: "rerank-v3.5", query: "cat on the mat", documents });
    expect(status).toBe(200);
    const results = body.results as { index: number; relevance_score: number }[];
    expect(results.map((r) => r.index)).toEqual([2, 0, 1, 3]);
    expect(results[0]?.relevance_score).toBeGreaterThan(results[1]?.relevance_score ?? 1);
    expect(results.every((r) => !("document" in r))).toBe(true);
    expect(body.meta).toEqual({ api_version: { version: "2", is_experimental: false }, billed_units: { search_units: 1 } });
  });

  it("when top_n is set, then only that many come back", async () => {
    const { body } = await post("/v2/rerank", { model: "rerank-v3.5", query: "cat on the mat", documents, top_n: 2 });
    expect((body.results as unknown[]).length).toBe(2);
  });

  it("when documents are objects (v1 style), then v2 refuses them with a 400", async () => {
    const res = await post("/v2/rerank", { model: "rerank-v3.5", query: "q", documents: [{ text: "a" }] });
    expect(res.status).toBe(400);
  });

  it("when a failure is scripted, then the next request gets it with Cohere's body, and the one after is normal", async () => {
    up.script({ status: 429 });
    const limited = await post("/v2/rerank", { model: "rerank-v3.5", query: "q", documents: ["q"] });
    expect(limited.status).toBe(429);
    expect(limited.body.message).toContain("Trial key");
    expect((await post("/v2/rerank", { model: "rerank-v3.5", query: "q", documents: ["q"] })).status).toBe(200);
  });
});
