import type { EmbeddingsRequest } from "@gw/contracts";
import { startCohereUpstream } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import type { EmbeddingsResult } from "../types";
import { failure, upstreamCall, useProviderUpstream } from "../test-context";
import { COHERE_MAX_TEXTS, cohereEmbeddings } from "./embeddings";

const KEY = "co-server-credential";
const PUBLIC_MODEL = "cohere-embed";

const provider = useProviderUpstream({ name: "co", kind: "cohere", apiKey: KEY, start: startCohereUpstream });

const send = (request: Partial<EmbeddingsRequest>, upstreamModel = "embed-v4.0", ctx = provider.context()) =>
  cohereEmbeddings(ctx, upstreamCall({ model: PUBLIC_MODEL, input: "hello world", ...request }, { publicModel: PUBLIC_MODEL, upstreamModel }));

function ok(result: EmbeddingsResult) {
  if (!result.ok) throw new Error(`expected an answer, got ${result.error.code}: ${result.error.message}`);
  return result.response;
}

describe("cohereEmbeddings: request", () => {
  it("when text is embedded, then Cohere gets v2 embed with search_document, float, and the server's key", async () => {
    ok(await send({ input: ["a b", "c"], user: "ignored", encoding_format: "base64" }));
    const [seen] = provider.up.requests;
    expect(seen?.path).toBe("/v2/embed");
    expect(seen?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen?.body).toEqual({ model: "embed-v4.0", texts: ["a b", "c"], input_type: "search_document", embedding_types: ["float"] });
  });

  it("when dimensions is set, then it is sent as output_dimension", async () => {
    const response = ok(await send({ dimensions: 512 }));
    expect(provider.up.requests[0]?.body).toMatchObject({ output_dimension: 512 });
    expect(response.data[0]?.embedding).toHaveLength(512);
  });

  it("when the input is token arrays, then it is a 400 on input and Cohere is not called", async () => {
    const error = failure(await send({ input: [[1, 2, 3]] }));
    expect([error.code, error.status, error.param, error.retryable]).toEqual(["invalid_request", 400, "input", false]);
    expect(provider.up.requests).toHaveLength(0);
  });
});

describe("cohereEmbeddings: answer", () => {
  it("when Cohere answers, then it is an OpenAI embeddings list in input order with Cohere's billed tokens as usage", async () => {
    const response = ok(await send({ input: ["hello world", "bye"] }));
    expect(response).toMatchObject({ object: "list", model: PUBLIC_MODEL, usage: { prompt_tokens: 3, total_tokens: 3 } });
    expect(response.data.map((d) => [d.object, d.index, (d.embedding as number[]).length])).toEqual([
      ["embedding", 0, 1536],
      ["embedding", 1, 1536],
    ]);
  });

  it("when more than 96 inputs come, then they go in consecutive batches and come back as one list with summed usage", async () => {
    const input = Array.from({ length: COHERE_MAX_TEXTS + 4 }, (_, i) => `text ${i}`);
    const response = ok(await send({ input, dimensions: 256 }));
    expect(provider.up.requests.map((r) => (r.body as { texts: string[] }).texts.length)).toEqual([96, 4]);
    expect(response.data.map((d) => d.index)).toEqual(input.map((_, i) => i));
    expect(response.usage).toEqual({ prompt_tokens: 200, total_tokens: 200 });
  });

  it("when Cohere bills no tokens, then no usage is made up", async () => {
    provider.up.script({ status: 200, body: { id: "x", embeddings: { float: [[0.1, 0.2]] }, texts: ["hello world"] } });
    const response = ok(await send({}));
    expect(response.usage).toBeUndefined();
    expect(response.data).toEqual([{ object: "embedding", index: 0, embedding: [0.1, 0.2] }]);
  });

  it("when Cohere returns fewer vectors than texts, then the answer is malformed: a retryable 502", async () => {
    provider.up.script({ status: 200, body: { id: "x", embeddings: { float: [] } } });
    const error = failure(await send({ input: ["a", "b"] }));
    expect([error.code, error.status, error.retryable]).toEqual(["upstream_error", 502, true]);
  });
});

describe("cohereEmbeddings: failures", () => {
  it("when a v3 model gets dimensions, then Cohere's 400 and message reach the caller", async () => {
    const error = failure(await send({ dimensions: 256 }, "embed-english-v3.0"));
    expect([error.code, error.status, error.retryable]).toEqual(["invalid_request", 400, false]);
    expect(error.message).toContain("output_dimension");
  });

  it("when Cohere refuses the server's key, then it is a retryable 502", async () => {
    const error = failure(await send({}, "embed-v4.0", provider.context({ apiKey: "wrong" })));
    expect([error.code, error.status, error.retryable]).toEqual(["upstream_error", 502, true]);
  });

  it("when Cohere rate-limits the second batch, then the whole call fails retryably with 429", async () => {
    provider.up.script({ status: 200 }, { status: 429, headers: { "retry-after": "2" } });
    const error = failure(await send({ input: Array.from({ length: 100 }, (_, i) => `t${i}`) }));
    expect([error.code, error.status, error.retryable]).toEqual(["upstream_rate_limited", 429, true]);
    expect(error.headers).toEqual({ "retry-after": "2" });
  });
});
