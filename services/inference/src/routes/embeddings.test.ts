import type { EmbeddingsResponse } from "@gw/contracts";
import { startCohereUpstream, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { base64ToFloats, encodeEmbeddings, floatsToBase64 } from "./embeddings";
import { reportedTokens, startRouteTestService, type RouteTestService } from "./route-test-service";

describe("embedding encodings", () => {
  it("when floats go to base64 and back, then the bytes are little-endian float32 and the values survive at float32 precision", () => {
    const text = floatsToBase64([1, -0.5, 0.1]);
    const bytes = Buffer.from(text, "base64");
    expect(bytes).toHaveLength(12);
    expect(bytes.readFloatLE(0)).toBe(1);
    expect(bytes.subarray(0, 4)).toEqual(Buffer.from([0x00, 0x00, 0x80, 0x3f]));
    expect(base64ToFloats(text)).toEqual([1, -0.5, Math.fround(0.1)]);
  });

  it("when a base64 vector is not a whole number of float32s, then it is a 502 (the provider's fault)", () => {
    expect(() => base64ToFloats(Buffer.from([1, 2, 3]).toString("base64"))).toThrow(expect.objectContaining({ code: "upstream_error", status: 502 }));
  });

  it("when an answer mixes encodings, then every vector ends up in the one asked for", () => {
    const response: EmbeddingsResponse = {
      object: "list",
      model: "m",
      data: [
        { object: "embedding", index: 0, embedding: [0.25, 2] },
        { object: "embedding", index: 1, embedding: floatsToBase64([0.5]) },
      ],
    };
    expect(encodeEmbeddings(response, "float").data.map((d) => d.embedding)).toEqual([[0.25, 2], [0.5]]);
    expect(encodeEmbeddings(response, "base64").data.map((d) => d.embedding)).toEqual([floatsToBase64([0.25, 2]), floatsToBase64([0.5])]);
  });
});

const OPENAI_KEY = "sk-embeddings-route";
const COHERE_KEY = "co-embeddings-route";

let openaiUp: UpstreamEmulator;
let cohereUp: UpstreamEmulator;
let service: RouteTestService;

beforeAll(async () => {
  openaiUp = await startOpenAIUpstream({ apiKey: OPENAI_KEY });
  cohereUp = await startCohereUpstream({ apiKey: COHERE_KEY });
  service = await startRouteTestService({
    upstreams: {
      oa: { kind: "openai", url: openaiUp.url, key: OPENAI_KEY },
      co: { kind: "cohere", url: cohereUp.url, key: COHERE_KEY },
    },
    models: {
      "embed-oa": { type: "embedding", provider: "oa", model: "text-embedding-3-small" },
      "embed-co": { type: "embedding", provider: "co", model: "embed-v4.0" },
      "rerank-co": { type: "rerank", provider: "co", model: "rerank-v3.5" },
    },
  });
});

afterAll(async () => {
  await service?.stop();
  await openaiUp?.close();
  await cohereUp?.close();
});

beforeEach(() => {
  openaiUp.reset();
  cohereUp.reset();
});

async function post(body: unknown) {
  const answer = await service.post("/v1/embeddings", body);
  return {
    status: answer.status,
    usage: reportedTokens(answer.headers) ?? null,
    body: JSON.parse(answer.text) as Record<string, unknown> & EmbeddingsResponse,
  };
}

describe("POST /v1/embeddings", () => {
  for (const model of ["embed-oa", "embed-co"]) {
    it(`when ${model} is asked for base64 and for floats, then both carry the same float32 vectors, and usage goes to ingress`, async () => {
      const floats = await post({ model, input: ["alpha beta", "gamma"], dimensions: 256 });
      const base64 = await post({ model, input: ["alpha beta", "gamma"], dimensions: 256, encoding_format: "base64" });
      expect([floats.status, base64.status]).toEqual([200, 200]);
      expect(floats.body).toMatchObject({ object: "list", model, usage: { prompt_tokens: 3, total_tokens: 3 } });
      expect(floats.usage).toBe("3");
      const vector = floats.body.data[1]?.embedding as number[];
      expect(vector).toHaveLength(256);
      expect(typeof base64.body.data[1]?.embedding).toBe("string");
      expect(base64ToFloats(base64.body.data[1]?.embedding as string)).toEqual(vector.map(Math.fround));
    });
  }

  it("when an OpenAI-compatible upstream ignores base64 and answers floats, then the caller still gets base64", async () => {
    openaiUp.script({
      status: 200,
      body: { object: "list", model: "x", data: [{ object: "embedding", index: 0, embedding: [0.5, -1] }], usage: { prompt_tokens: 1, total_tokens: 1 } },
    });
    const { body } = await post({ model: "embed-oa", input: "hi", encoding_format: "base64" });
    expect(body.data[0]?.embedding).toBe(floatsToBase64([0.5, -1]));
    expect(body.model).toBe("embed-oa");
  });

  it("when the body is wrong, then 400 names the field", async () => {
    const badInput = await post({ model: "embed-oa", input: 5 });
    expect(badInput.status).toBe(400);
    expect(badInput.body).toMatchObject({ error: { type: "invalid_request_error", param: "input" } });
    const badFormat = await post({ model: "embed-oa", input: "x", encoding_format: "hex" });
    expect(badFormat.body).toMatchObject({ error: { param: "encoding_format" } });
    const noModel = await post({ input: "x" });
    expect(noModel.body).toMatchObject({ error: { param: "model" } });
    expect(openaiUp.requests).toHaveLength(0);
  });

  it("when a rerank model is named, then 400 on model; an unknown one is 404", async () => {
    expect(await post({ model: "rerank-co", input: "x" })).toMatchObject({ status: 400, body: { error: { param: "model" } } });
    expect(await post({ model: "nope", input: "x" })).toMatchObject({ status: 404, body: { error: { code: "model_not_found" } } });
  });

  it("when the upstream rejects the request, then its 4xx status comes back and no usage is reported", async () => {
    const answer = await post({ model: "embed-co", input: "x", dimensions: 300 });
    expect(answer.status).toBe(422);
    expect(answer.usage).toBeNull();
  });
});
