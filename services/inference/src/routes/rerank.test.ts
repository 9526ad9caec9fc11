import type { RerankResponse } from "@gw/contracts";
import { startCohereUpstream, startJinaUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { reportedTokens, startRouteTestService, type RouteTestService } from "./route-test-service";

const COHERE_KEY = "co-rerank-route";
const JINA_KEY = "jina-rerank-route";

let cohereUp: UpstreamEmulator;
let jinaUp: UpstreamEmulator;
let service: RouteTestService;

beforeAll(async () => {
  cohereUp = await startCohereUpstream({ apiKey: COHERE_KEY });
  jinaUp = await startJinaUpstream({ apiKey: JINA_KEY });
  service = await startRouteTestService({
    upstreams: {
      co: { kind: "cohere", url: cohereUp.url, key: COHERE_KEY },
      jina: { kind: "jina", url: jinaUp.url, key: JINA_KEY },
    },
    models: {
      "rerank-co": { type: "rerank", provider: "co", model: "rerank-v3.5" },
      "rerank-jina": { type: "rerank", provider: "jina", model: "jina-reranker-v2-base-multilingual" },
      "embed-co": { type: "embedding", provider: "co", model: "embed-v4.0" },
    },
  });
});

afterAll(async () => {
  await service?.stop();
  await cohereUp?.close();
  await jinaUp?.close();
});

beforeEach(() => {
  cohereUp.reset();
  jinaUp.reset();
});

async function post(body: unknown) {
  const answer = await service.post("/v1/rerank", body);
  return {
    status: answer.status,
    usage: reportedTokens(answer.headers) ?? null,
    body: JSON.parse(answer.text) as Record<string, unknown> & RerankResponse,
  };
}

const query = "cat on the mat";
const documents = ["the cat sat", "dogs and cats and the mat", "a cat sat on the mat", "nothing here"];

describe("POST /v1/rerank", () => {
  for (const model of ["rerank-co", "rerank-jina"]) {
    it(`when ${model} reranks with top_n and return_documents, then the best n come back in order with their text`, async () => {
      const { status, body } = await post({ model, query, documents, top_n: 2, return_documents: true });
      expect(status).toBe(200);
      expect(typeof body.id).toBe("string");
      expect(body.results).toEqual([
        { index: 2, relevance_score: expect.any(Number), document: { text: "a cat sat on the mat" } },
        { index: 0, relevance_score: expect.any(Number), document: { text: "the cat sat" } },
      ]);
      expect(body.results[0]!.relevance_score).toBeGreaterThan(body.results[1]!.relevance_score);
    });
  }

  it("when Cohere reranks, then 0 tokens are reported to ingress (it bills search units)", async () => {
    const answer = await post({ model: "rerank-co", query, documents });
    expect(answer.usage).toBe("0");
    expect(answer.body.meta).toMatchObject({ billed_units: { search_units: 1 } });
    expect(answer.body.results).toHaveLength(4);
  });

  it("when Jina reranks, then its token count is reported to ingress and shown in the answer", async () => {
    const answer = await post({ model: "rerank-jina", query, documents: documents.map((text) => ({ text })) });
    const tokens = answer.body.usage?.total_tokens;
    expect(tokens).toBeGreaterThan(0);
    expect(answer.usage).toBe(String(tokens));
    expect(answer.body.meta).toEqual({ billed_units: { total_tokens: tokens } });
  });

  it("when the body is wrong, then 400 names the field and no upstream is called", async () => {
    expect(await post({ model: "rerank-co", query })).toMatchObject({ status: 400, body: { error: { param: "documents" } } });
    expect(await post({ model: "rerank-co", query, documents: ["ok", 5] })).toMatchObject({ status: 400, body: { error: { param: "documents[1]" } } });
    expect(await post({ model: "rerank-co", query, documents, top_n: 0 })).toMatchObject({ status: 400, body: { error: { param: "top_n" } } });
    expect(await post({ model: "rerank-co", query: "", documents })).toMatchObject({ status: 400, body: { error: { param: "query" } } });
    expect(cohereUp.requests).toHaveLength(0);
  });

  it("when an embedding model is named, then 400 on model", async () => {
    expect(await post({ model: "embed-co", query, documents })).toMatchObject({ status: 400, body: { error: { param: "model" } } });
  });
});
