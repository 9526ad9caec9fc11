import { Writable } from "node:stream";
import { createInProcessBus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { internalHeaders, type Identity } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { startMistralUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createInferenceService, type InferenceService } from "../service";
import { reportedTokens } from "./route-test-service";

const SECRET = "ocr-route-test-secret";
const MISTRAL_KEY = "mistral-ocr-route";
const identity: Identity = { workspace_id: "ws_1", key_id: "key_1", plan: "pro", models: [["*"]], tools: [] };
const limits = { requests_per_minute: 100, tokens_per_minute: 100_000 };

let up: UpstreamEmulator;
let service: InferenceService;
let baseUrl: string;

beforeAll(async () => {
  up = await startMistralUpstream({ apiKey: MISTRAL_KEY });
  const gateway = GatewayConfig.parse({
    providers: { mistral: { kind: "mistral", base_url: up.url, api_key_env: "MISTRAL_KEY", max_retries: 0 } },
    models: {
      ocr: { type: "ocr", routes: [{ provider: "mistral", model: "mistral-ocr-latest" }] },
      "chat-mistral": { type: "chat", routes: [{ provider: "mistral", model: "mistral-small-latest" }] },
    },
    plans: { plus: limits, pro: limits, enterprise: limits },
  });
  const logger = createLogger({ service: "inference-test", level: "warn", destination: new Writable({ write: (_c, _e, done) => done() }) });
  service = createInferenceService({
    settings: { host: "127.0.0.1", port: 0, internalSecret: SECRET, bodyLimitBytes: 1_000_000, jobConcurrency: 0 },
    gateway,
    secrets: { mistral: MISTRAL_KEY },
    bus: createInProcessBus({ logger }),
    logger,
  });
  baseUrl = (await service.start()).url;
});

afterAll(async () => {
  await service?.stop();
  await up?.close();
});

beforeEach(() => up.reset());

async function post(body: unknown) {
  const res = await fetch(`${baseUrl}/v1/ocr`, {
    method: "POST",
    headers: { "content-type": "application/json", [internalHeaders.identity]: signIdentity(identity, SECRET) },
    body: JSON.stringify(body),
  });
  return { status: res.status, usage: reportedTokens(Object.fromEntries(res.headers)) ?? null, body: (await res.json()) as Record<string, unknown> };
}

const document = { type: "document_url", document_url: "https://example.com/report.pdf", document_name: "report.pdf" };

describe("POST /v1/ocr", () => {
  it("when a document is read, then the pages come back under the public model with object ocr, and 0 tokens are reported", async () => {
    const { status, usage, body } = await post({ model: "ocr", document, pages: [1] });
    expect(status).toBe(200);
    expect(usage).toBe("0");
    expect(body).toMatchObject({ model: "ocr", object: "ocr", document_annotation: null, usage_info: { pages_processed: 1 } });
    expect((body.pages as { index: number }[]).map((p) => p.index)).toEqual([1]);
    expect(up.requests[0]?.body).toMatchObject({ model: "mistral-ocr-latest", pages: [1] });
  });

  it("when the document is a Mistral file_id, then 400 on document.type saying files cannot be uploaded through the gateway", async () => {
    const { status, body } = await post({ model: "ocr", document: { type: "file", file_id: "file-123" } });
    expect(status).toBe(400);
    const error = body.error as { param: string; message: string };
    expect(error.param).toBe("document.type");
    expect(error.message).toContain("cannot be uploaded through the gateway");
    expect(up.requests).toHaveLength(0);
  });

  it("when the body is wrong, then 400 names the field and no upstream is called", async () => {
    expect(await post({ model: "ocr", document: { type: "document_url" } })).toMatchObject({
      status: 400,
      body: { error: { param: "document.document_url" } },
    });
    expect(await post({ model: "ocr", document, pages: [-1] })).toMatchObject({ status: 400, body: { error: { param: "pages[0]" } } });
    expect(await post({ model: "ocr", document, table_format: "csv" })).toMatchObject({ status: 400, body: { error: { param: "table_format" } } });
    expect(await post({ model: "ocr" })).toMatchObject({ status: 400, body: { error: { param: "document" } } });
    expect(up.requests).toHaveLength(0);
  });

  it("when a chat model is named, then 400 on model", async () => {
    expect(await post({ model: "chat-mistral", document })).toMatchObject({ status: 400, body: { error: { param: "model" } } });
  });
});
