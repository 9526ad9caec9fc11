import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { UpstreamEmulator } from "./http-emulator";
import { startJinaUpstream } from "./jina-upstream";
import { relevanceScore } from "./rerank-scores";

const KEY = "jina_test_key";
let up: UpstreamEmulator;
let stringDocs: UpstreamEmulator;

beforeAll(async () => {
  up = await startJinaUpstream({ apiKey: KEY });
  stringDocs = await startJinaUpstream({ apiKey: KEY, documentsAsStrings: true });
});
afterEach(() => {
  up.reset();
  stringDocs.reset();
});
afterAll(async () => {
  await up.close();
  await stringDocs.close();
});

async function post(base: string, body: unknown, auth: string | null = `Bearer ${KEY}`) {
  const res = await fetch(`${base}/v1/rerank`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const request = {
  model: "jina-reranker-v2-base-multilingual",
  query: "organic skincare for sensitive skin",
  documents: ["Organic skincare for sensitive skin with aloe", "New makeup trends", "Skincare for men"],
};

describe("jina emulator", () => {
  it("when the key is missing or wrong, then 401 with a {detail} body", async () => {
    expect(await post(up.url, request, null)).toMatchObject({ status: 401, body: { detail: expect.any(String) } });
    expect((await post(up.url, request, "Bearer wrong")).status).toBe(401);
  });

  it("when documents are reranked, then results are best first with usage and no id, and no documents by default", async () => {
    const { status, body } = await post(up.url, request);
    expect(status).toBe(200);
    expect(body).toMatchObject({ model: request.model, usage: { total_tokens: expect.any(Number) } });
    expect(body.id).toBeUndefined();
    const results = body.results as { index: number; relevance_score: number; document?: unknown }[];
    expect(results.map((r) => r.index)).toEqual([0, 2, 1]);
    expect(results[0]?.relevance_score).toBe(relevanceScore(request.query, request.documents[0] ?? ""));
    expect(results.every((r) => r.document === undefined)).toBe(true);
  });

  it("when return_documents and top_n are set, then the best n come back with {text} documents", async () => {
    const { body } = await post(up.url, { ...request, top_n: 1, return_documents: true });
    expect(body.results).toEqual([{ index: 0, document: { text: request.documents[0] }, relevance_score: expect.any(Number) }]);
  });

  it("when the emulator is set to string documents, then document is the plain text", async () => {
    const { body } = await post(stringDocs.url, { ...request, top_n: 1, return_documents: true });
    expect((body.results as { document: unknown }[])[0]?.document).toBe(request.documents[0]);
  });

  it("when documents are {text} objects, then they are ranked like strings", async () => {
    const { status, body } = await post(up.url, { ...request, documents: request.documents.map((text) => ({ text })) });
    expect(status).toBe(200);
    expect((body.results as { index: number }[]).map((r) => r.index)).toEqual([0, 2, 1]);
  });

  it("when query is missing, then 422 with a FastAPI detail naming body.query", async () => {
    const { status, body } = await post(up.url, { model: request.model, documents: request.documents });
    expect(status).toBe(422);
    expect(body.detail).toEqual([{ type: "missing", loc: ["body", "query"], msg: "Field required" }]);
  });

  it("when a failure is scripted, then it is answered with a {detail} body", async () => {
    up.script({ status: 503 });
    expect(await post(up.url, request)).toMatchObject({ status: 503, body: { detail: "Service Unavailable" } });
  });
});
