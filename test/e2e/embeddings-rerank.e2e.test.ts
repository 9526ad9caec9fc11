import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI, startCohereUpstream, startJinaUpstream, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { adminClient, startTestMesh, type RunningMesh } from "./harness";

/**
 * Embeddings and rerank through the four services: the official `openai` client against an
 * OpenAI-kind and a Cohere-kind embedding model, and plain fetch on /v1/rerank against Cohere and
 * Jina rerankers. Each upstream must see the gateway's own credential, never the caller's key.
 */
const OPENAI_KEY = "sk-upstream-openai-embeddings";
const COHERE_KEY = "co-upstream-embed-rerank";
const JINA_KEY = "jina_upstream_rerank";

let openaiUp: UpstreamEmulator;
let cohereUp: UpstreamEmulator;
let jinaUp: UpstreamEmulator;
let gw: RunningMesh;
let key: string;

beforeAll(async () => {
  openaiUp = await startOpenAIUpstream({ apiKey: OPENAI_KEY });
  cohereUp = await startCohereUpstream({ apiKey: COHERE_KEY });
  jinaUp = await startJinaUpstream({ apiKey: JINA_KEY });
  gw = await startTestMesh(
    `
providers:
  oa:   { kind: openai, base_url: "${openaiUp.url}", api_key_env: E2E_OPENAI_KEY }
  co:   { kind: cohere, base_url: "${cohereUp.url}", api_key_env: E2E_COHERE_KEY }
  jina: { kind: jina,   base_url: "${jinaUp.url}", api_key_env: E2E_JINA_KEY }
models:
  embed-oa:    { type: embedding, routes: [{ provider: oa, model: text-embedding-3-small }] }
  embed-co:    { type: embedding, routes: [{ provider: co, model: embed-v4.0 }] }
  rerank-co:   { type: rerank,    routes: [{ provider: co, model: rerank-v3.5 }] }
  rerank-jina: { type: rerank,    routes: [{ provider: jina, model: jina-reranker-v2-base-multilingual }] }
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
    { E2E_OPENAI_KEY: OPENAI_KEY, E2E_COHERE_KEY: COHERE_KEY, E2E_JINA_KEY: JINA_KEY },
  );
  const admin = adminClient(gw.adminURL, gw.adminToken);
  const ws = await admin<{ id: string }>("POST", "/admin/workspaces", {
    name: "embeddings-rerank",
    plan: "pro",
    models: ["embed-oa", "embed-co", "rerank-co", "rerank-jina"],
  });
  key = (await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {})).key;
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await openaiUp?.close();
  await cohereUp?.close();
  await jinaUp?.close();
});

const openai = () => new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });

/** Every request the upstream saw carried the server's key, and none carried the caller's. */
function sawOnlyServerKey(up: UpstreamEmulator, serverKey: string): void {
  expect(up.requests.length).toBeGreaterThan(0);
  for (const seen of up.requests) {
    expect(seen.headers.authorization).toBe(`Bearer ${serverKey}`);
    expect(JSON.stringify(seen.headers)).not.toContain(key);
  }
}

const input = ["The quick brown fox", "jumps over the lazy dog"];

for (const [model, upstream] of [
  ["embed-oa", () => openaiUp],
  ["embed-co", () => cohereUp],
] as const) {
  describe(`when the openai client embeds with ${model}`, () => {
    it("then the default (base64, decoded by the SDK) and explicit float give the same spec-valid vectors", async () => {
      const decoded = await openai().embeddings.create({ model, input });
      assertOpenAI("CreateEmbeddingResponse", decoded);
      expect(decoded.model).toBe(model);
      expect(decoded.data.map((d) => d.index)).toEqual([0, 1]);
      expect(decoded.usage.total_tokens).toBeGreaterThan(0);
      const first = decoded.data[0]!.embedding;
      expect(first.length).toBeGreaterThan(0);

      const floats = await openai().embeddings.create({ model, input, encoding_format: "float" });
      assertOpenAI("CreateEmbeddingResponse", floats);
      expect(floats.data[0]!.embedding.length).toBe(first.length);
      expect(Array.from(first)).toEqual(floats.data[0]!.embedding.map(Math.fround));
      expect(floats.usage).toEqual(decoded.usage);
      sawOnlyServerKey(upstream(), model === "embed-oa" ? OPENAI_KEY : COHERE_KEY);
    });

    it("then dimensions sets the vector size", async () => {
      const res = await openai().embeddings.create({ model, input: "size me", dimensions: 256, encoding_format: "float" });
      assertOpenAI("CreateEmbeddingResponse", res);
      expect(res.data[0]!.embedding).toHaveLength(256);
    });
  });
}

describe("when the openai client sends a bad embeddings body", () => {
  it("then 400 names the field", async () => {
    const err = await openai()
      .embeddings.create({ model: "embed-oa", input: [] as string[] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("input");
  });
});

async function rerank(body: unknown) {
  const res = await fetch(`${gw.baseURL}/rerank`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const query = "cat on the mat";
const documents = ["the cat sat", "dogs and cats and the mat", "a cat sat on the mat", "nothing here"];

for (const [model, upstream, serverKey] of [
  ["rerank-co", () => cohereUp, COHERE_KEY],
  ["rerank-jina", () => jinaUp, JINA_KEY],
] as const) {
  describe(`when fetch reranks with ${model}`, () => {
    it("then every document comes back, best first, without documents by default", async () => {
      const { status, headers, body } = await rerank({ model, query, documents });
      expect(status).toBe(200);
      expect(typeof body.id).toBe("string");
      const results = body.results as { index: number; relevance_score: number; document?: unknown }[];
      expect(results.map((r) => r.index)).toEqual([2, 0, 1, 3]);
      for (let i = 1; i < results.length; i++) expect(results[i - 1]!.relevance_score).toBeGreaterThanOrEqual(results[i]!.relevance_score);
      expect(results.every((r) => r.document === undefined)).toBe(true);
      // The internal usage header is settled by ingress and never reaches the caller.
      expect([...headers.keys()].some((h) => h.startsWith("x-gw-"))).toBe(false);
      sawOnlyServerKey(upstream(), serverKey);
    });

    it("then top_n bounds the count and return_documents adds each document's text", async () => {
      const { body } = await rerank({ model, query, documents: documents.map((text) => ({ text })), top_n: 2, return_documents: true });
      expect(body.results).toEqual([
        { index: 2, relevance_score: expect.any(Number), document: { text: "a cat sat on the mat" } },
        { index: 0, relevance_score: expect.any(Number), document: { text: "the cat sat" } },
      ]);
    });
  });
}

describe("when a rerank body is bad", () => {
  it("then 400 names the field, in OpenAI's error envelope", async () => {
    const { status, body } = await rerank({ model: "rerank-co", query, documents: "not a list" });
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: { type: "invalid_request_error", param: "documents", code: "invalid_request" } });
  });
});
