import type { RerankRequest } from "@gw/contracts";
import { startJinaUpstream } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import type { RerankResult } from "../types";
import { failure, upstreamCall, useProviderUpstream } from "../test-context";
import { jinaErrorBody, jinaRerank } from "./rerank";

const KEY = "jina_server_credential";
const PUBLIC_MODEL = "rerank-multi";
const UPSTREAM_MODEL = "jina-reranker-v2-base-multilingual";

const provider = useProviderUpstream({ name: "jina", kind: "jina", apiKey: KEY, start: startJinaUpstream });
const models = { publicModel: PUBLIC_MODEL, upstreamModel: UPSTREAM_MODEL };

const documents = ["Organic skincare for sensitive skin with aloe", "New makeup trends", "Skincare for men"];

const send = (request: Partial<RerankRequest>, ctx = provider.context()) =>
  jinaRerank(ctx, upstreamCall({ model: PUBLIC_MODEL, query: "organic skincare for sensitive skin", documents, ...request }, models));

function ok(result: RerankResult) {
  if (!result.ok) throw new Error(`expected an answer, got ${result.error.code}: ${result.error.message}`);
  return result;
}

describe("jinaRerank", () => {
  it("when documents are reranked, then Jina gets strings without asking documents back, and the answer is Cohere-shaped with a made-up id and token usage", async () => {
    const result = ok(await send({ documents: [documents[0] ?? "", { text: documents[1] ?? "" }, documents[2] ?? ""], top_n: 3 }));
    const [seen] = provider.up.requests;
    expect(seen?.path).toBe("/v1/rerank");
    expect(seen?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen?.body).toEqual({ model: UPSTREAM_MODEL, query: "organic skincare for sensitive skin", documents, return_documents: false, top_n: 3 });
    const tokens = result.usageTokens;
    expect(tokens).toBeGreaterThan(0);
    expect(result.response).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      results: [
        { index: 0, relevance_score: expect.any(Number) },
        { index: 2, relevance_score: expect.any(Number) },
        { index: 1, relevance_score: 0 },
      ],
      meta: { billed_units: { total_tokens: tokens } },
      usage: { total_tokens: tokens },
    });
  });

  it("when return_documents is set, then each result carries the request's text as {text}", async () => {
    const result = ok(await send({ return_documents: true, top_n: 1 }));
    expect(result.response.results).toEqual([{ index: 0, relevance_score: expect.any(Number), document: { text: documents[0] } }]);
  });

  it("when Jina sends documents anyway, as plain strings or objects, and no usage, then the answer still parses", async () => {
    provider.up.script({
      status: 200,
      body: {
        model: UPSTREAM_MODEL,
        results: [
          { index: 1, document: "New makeup trends", relevance_score: 0.2 },
          { index: 0, document: { text: "x" }, relevance_score: 0.7 },
        ],
      },
    });
    const result = ok(await send({ return_documents: true }));
    expect(result.response.results).toEqual([
      { index: 0, relevance_score: 0.7, document: { text: documents[0] } },
      { index: 1, relevance_score: 0.2, document: { text: documents[1] } },
    ]);
    expect(result.usageTokens).toBeUndefined();
    expect(result.response.meta).toBeUndefined();
  });

  it("when Jina refuses the request with a 422, then the caller gets that status with Jina's detail as the message", async () => {
    provider.up.script({ status: 422, body: { detail: [{ type: "missing", loc: ["body", "query"], msg: "Field required" }] } });
    const error = failure(await send({}));
    expect([error.code, error.status, error.retryable]).toEqual(["invalid_request", 422, false]);
    expect(error.message).toBe("query: Field required");
  });

  it("when Jina refuses the server's key, then it is a retryable 502", async () => {
    const error = failure(await send({}, provider.context({ apiKey: "wrong" })));
    expect([error.code, error.status, error.retryable]).toEqual(["upstream_error", 502, true]);
  });
});

describe("jinaErrorBody", () => {
  it("when detail is a string, then it becomes the message; other bodies are left alone", () => {
    expect(JSON.parse(jinaErrorBody('{"detail":"No credit"}'))).toEqual({ message: "No credit" });
    expect(jinaErrorBody("<html>")).toBe("<html>");
    expect(jinaErrorBody('{"error":{"message":"m"}}')).toBe('{"error":{"message":"m"}}');
  });
});
