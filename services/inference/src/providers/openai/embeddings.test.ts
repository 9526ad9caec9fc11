import type { EmbeddingsRequest } from "@gw/contracts";
import { startOpenAIUpstream } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import type { EmbeddingsResult } from "../types";
import { failure, upstreamCall, useProviderUpstream } from "../test-context";
import { openaiEmbeddings } from "./embeddings";

const KEY = "sk-server-credential-embeddings";
const UPSTREAM_MODEL = "text-embedding-3-small";
const PUBLIC_MODEL = "embed-small";

const provider = useProviderUpstream({ name: "oa", kind: "openai", apiKey: KEY, start: startOpenAIUpstream, baseUrl: (url) => `${url}/` });
const models = { publicModel: PUBLIC_MODEL, upstreamModel: UPSTREAM_MODEL };

const send = (request: Partial<EmbeddingsRequest>, ctx = provider.context()) =>
  openaiEmbeddings(ctx, upstreamCall({ model: PUBLIC_MODEL, input: "hello", ...request }, models));

function ok(result: EmbeddingsResult) {
  if (!result.ok) throw new Error(`expected an answer, got ${result.error.code}: ${result.error.message}`);
  return result.response;
}

describe("openaiEmbeddings", () => {
  it("when inputs are embedded, then the request passes through under the upstream model and the answer names the public one", async () => {
    const response = ok(await send({ input: ["one", "two words"], dimensions: 8, user: "u1" }));
    expect(response).toMatchObject({ object: "list", model: PUBLIC_MODEL, usage: { prompt_tokens: 3, total_tokens: 3 } });
    expect(response.data.map((d) => [d.index, (d.embedding as number[]).length])).toEqual([
      [0, 8],
      [1, 8],
    ]);
    const [seen] = provider.up.requests;
    expect(seen?.path).toBe("/v1/embeddings");
    expect(seen?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen?.body).toEqual({ model: UPSTREAM_MODEL, input: ["one", "two words"], dimensions: 8, user: "u1" });
  });

  it("when base64 is asked for, then it is asked upstream and the strings come back as they are", async () => {
    const response = ok(await send({ encoding_format: "base64", dimensions: 4 }));
    expect(provider.up.requests[0]?.body).toMatchObject({ encoding_format: "base64" });
    expect(typeof response.data[0]?.embedding).toBe("string");
    expect(Buffer.from(response.data[0]?.embedding as string, "base64")).toHaveLength(16);
  });

  it("when the upstream refuses the server's key, then it is a retryable 502, not the caller's 401", async () => {
    const error = failure(await send({}, provider.context({ apiKey: "sk-wrong" })));
    expect([error.code, error.status, error.retryable]).toEqual(["upstream_error", 502, true]);
  });

  it("when the upstream rejects the request, then its 400 and message reach the caller without the upstream model name", async () => {
    provider.up.script({
      status: 400,
      body: { error: { message: `${UPSTREAM_MODEL} does not support dimensions`, type: "invalid_request_error", param: null, code: null } },
    });
    const error = failure(await send({ dimensions: 9999 }));
    expect([error.code, error.status, error.retryable]).toEqual(["invalid_request", 400, false]);
    expect(error.message).toBe(`${PUBLIC_MODEL} does not support dimensions`);
  });

  it("when the upstream answers something that is not an embeddings list, then it is a retryable 502", async () => {
    provider.up.script({ status: 200, body: { object: "list", data: [{ index: 0 }] } });
    const error = failure(await send({}));
    expect([error.code, error.status, error.retryable]).toEqual(["upstream_error", 502, true]);
  });

  it("when the upstream is overloaded, then the failure is retryable so the next route is tried", async () => {
    provider.up.script({ status: 503 });
    const error = failure(await send({}));
    expect([error.status, error.retryable]).toEqual([503, true]);
  });
});
