import { Writable } from "node:stream";
import { createInProcessBus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { internalHeaders, type Identity, type RerankResponse } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { startCohereUpstream, startJinaUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createInferenceService, type InferenceService } from "../service";

const SECRET = "rerank-route-test-secret";
const COHERE_KEY = "co-rerank-route";
const JINA_KEY = "jina-rerank-route";
const identity: Identity = { workspace_id: "ws_1", key_id: "key_1", plan: "pro", models: [["*"]], tools: [] };
const limits = { requests_per_minute: 100, tokens_per_minute: 100_000 };

let cohereUp: UpstreamEmulator;
let jinaUp: UpstreamEmulator;
let service: InferenceService;
let baseUrl: string;

beforeAll(async () => {
  cohereUp = await startCohereUpstream({ apiKey: COHERE_KEY });
  jinaUp = await startJinaUpstream({ apiKey: JINA_KEY });
  const gateway = GatewayConfig.parse({
    providers: {
      co: { kind: "cohere", base_url: cohereUp.url, api_key_env: "CO_KEY" },
      jina: { kind: "jina", base_url: jinaUp.url, api_key_env: "JINA_KEY" },
    },
    models: {
      "rerank-co": { type: "rerank", routes: [{ provider: "co", model: "rerank-v3.5" }] },
      "rerank-jina": { type: "rerank", routes: [{ provider: "jina", model: "jina-reranker-v2-base-multilingual" }] },
      "embed-co": { type: "embedding", routes: [{ provider: "co", model: "embed-v4.0" }] },
    },
    plans: { plus: limits, pro: limits, enterprise: limits },
  });
  const logger = createLogger({ service: "inference-test", level: "warn", destination: new Writable({ write: (_c, _e, done) => done() }) });
  service = createInferenceService({
    settings: { host: "127.0.0.1", port: 0, internalSecret: SECRET, bodyLimitBytes: 1_000_000 },
    gateway,
    secrets: { co: COHERE_KEY, jina: JINA_KEY },
    bus: createInProcessBus({ logger }),
    logger,
  });
  baseUrl = (await service.start()).url;
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
  const res = await fetch(`${baseUrl}/v1/rerank`, {
    method: "POST",
    headers: { "content-type": "application/json", [internalHeaders.identity]: signIdentity(identity, SECRET) },
    body: JSON.stringify(body),
  });
  return { status: res.status, usage: res.headers.get(internalHeaders.usageTokens), body: (await res.json()) as Record<string, unknown> & RerankResponse };
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
