import type { RerankRequest } from "@gw/contracts";
import { startCohereUpstream } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import type { RerankResult } from "../types";
import { failure, upstreamCall, useProviderUpstream } from "../test-context";
import { cohereRerank } from "./rerank";

const KEY = "co-server-credential";
const PUBLIC_MODEL = "rerank-public";
const UPSTREAM_MODEL = "rerank-v3.5";

const provider = useProviderUpstream({ name: "co", kind: "cohere", apiKey: KEY, start: startCohereUpstream });
const models = { publicModel: PUBLIC_MODEL, upstreamModel: UPSTREAM_MODEL };

const documents = ["the cat sat", "dogs and cats and the mat", "a cat sat on the mat", "nothing here"];

const send = (request: Partial<RerankRequest>, ctx = provider.context()) =>
  cohereRerank(ctx, upstreamCall({ model: PUBLIC_MODEL, query: "cat on the mat", documents, ...request }, models));

function ok(result: RerankResult) {
  if (!result.ok) throw new Error(`expected an answer, got ${result.error.code}: ${result.error.message}`);
  return result;
}

describe("cohereRerank", () => {
  it("when documents are reranked, then Cohere v2 gets strings and the answer is ordered, with its id and meta, and 0 tokens", async () => {
    const result = ok(await send({ documents: [{ text: "the cat sat" }, ...documents.slice(1)], max_tokens_per_doc: 512 }));
    const [seen] = provider.up.requests;
    expect(seen?.path).toBe("/v2/rerank");
    expect(seen?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen?.body).toEqual({ model: UPSTREAM_MODEL, query: "cat on the mat", documents, max_tokens_per_doc: 512 });
    expect(result.response.results.map((r) => r.index)).toEqual([2, 0, 1, 3]);
    expect(result.response.results.every((r) => r.document === undefined)).toBe(true);
    expect(result.response.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.response.meta).toMatchObject({ billed_units: { search_units: 1 } });
    expect(result.usageTokens).toBe(0);
  });

  it("when top_n and return_documents are set, then top_n goes upstream and the documents come from the request", async () => {
    const result = ok(await send({ top_n: 2, return_documents: true, documents: documents.map((text) => ({ text })) }));
    expect(provider.up.requests[0]?.body).toMatchObject({ top_n: 2 });
    expect(result.response.results).toEqual([
      { index: 2, relevance_score: expect.any(Number), document: { text: "a cat sat on the mat" } },
      { index: 0, relevance_score: expect.any(Number), document: { text: "the cat sat" } },
    ]);
  });

  it("when Cohere's results come unsorted and beyond top_n, then they are sorted and cut anyway", async () => {
    provider.up.script({
      status: 200,
      body: {
        id: "r1",
        results: [
          { index: 1, relevance_score: 0.1 },
          { index: 3, relevance_score: 0.9 },
          { index: 0, relevance_score: 0.5 },
        ],
      },
    });
    const result = ok(await send({ top_n: 2 }));
    expect(result.response).toEqual({
      id: "r1",
      results: [
        { index: 3, relevance_score: 0.9 },
        { index: 0, relevance_score: 0.5 },
      ],
    });
  });

  it("when a result points past the documents, then the answer is malformed: a retryable 502", async () => {
    provider.up.script({ status: 200, body: { id: "r1", results: [{ index: 9, relevance_score: 0.9 }] } });
    const error = failure(await send({}));
    expect([error.code, error.status, error.retryable]).toEqual(["upstream_error", 502, true]);
  });

  it("when Cohere rate-limits, then it is a retryable 429; a refused key is a retryable 502", async () => {
    provider.up.script({ status: 429 });
    const limited = failure(await send({}));
    expect([limited.code, limited.status, limited.retryable]).toEqual(["upstream_rate_limited", 429, true]);
    const refused = failure(await send({}, provider.context({ apiKey: "wrong" })));
    expect([refused.code, refused.status, refused.retryable]).toEqual(["upstream_error", 502, true]);
  });
});
