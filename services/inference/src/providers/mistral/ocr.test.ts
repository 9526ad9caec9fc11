import { ProviderConfig } from "@gw/config";
import type { OcrRequest } from "@gw/contracts";
import { startMistralUpstream, type UpstreamEmulator } from "@gw/testkit";
import type { Agent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createUpstreamAgent } from "@gw/service-kit";
import type { OcrResult, ProviderContext } from "../types";
import { mistralErrorBody, mistralOcr } from "./ocr";

const KEY = "mistral-server-credential";
const PUBLIC_MODEL = "ocr-public";
const UPSTREAM_MODEL = "mistral-ocr-latest";

let up: UpstreamEmulator;
let agent: Agent;

beforeAll(async () => {
  up = await startMistralUpstream({ apiKey: KEY });
  agent = createUpstreamAgent();
});
afterEach(() => up.reset());
afterAll(async () => {
  await agent.close();
  await up.close();
});

function context(apiKey = KEY): ProviderContext {
  return { name: "mistral", config: ProviderConfig.parse({ kind: "mistral", base_url: up.url }), apiKey, agent };
}

const document = { type: "document_url" as const, document_url: "https://example.com/report.pdf", document_name: "report.pdf" };

const send = (request: Partial<OcrRequest>, ctx = context()) =>
  mistralOcr(ctx, {
    request: { model: PUBLIC_MODEL, document, ...request } as OcrRequest,
    publicModel: PUBLIC_MODEL,
    upstreamModel: UPSTREAM_MODEL,
    requestId: "req_test",
    signal: new AbortController().signal,
  });

function ok(result: OcrResult) {
  if (!result.ok) throw new Error(`expected an answer, got ${result.error.code}: ${result.error.message}`);
  return result.response;
}

function failure(result: OcrResult) {
  if (result.ok) throw new Error("expected a failure");
  return result.error;
}

describe("mistralOcr", () => {
  it("when a document is read, then {base_url}/ocr gets the body under the upstream model and the server's key, and the answer is public", async () => {
    const response = ok(await send({ pages: [0, 2], include_image_base64: true, table_format: "html" }));
    const [seen] = up.requests;
    expect(seen?.path).toBe("/v1/ocr");
    expect(seen?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen?.body).toEqual({ model: UPSTREAM_MODEL, document, pages: [0, 2], include_image_base64: true, table_format: "html" });
    expect(response.object).toBe("ocr");
    expect(response.model).toBe(PUBLIC_MODEL);
    expect(response.pages.map((p) => p.index)).toEqual([0, 2]);
    expect(response.pages[0]!.markdown).toContain("report.pdf");
    expect(response.pages[0]!.images[0]!.image_base64).toMatch(/^data:image\/png;base64,/);
    expect(response.document_annotation).toBeNull();
    expect(response.usage_info).toMatchObject({ pages_processed: 2 });
  });

  it("when a document annotation is asked for, then the JSON string comes back as document_annotation", async () => {
    const format = { type: "json_schema" as const, json_schema: { name: "doc", schema: { type: "object", properties: { title: { type: "string" } } } } };
    const response = ok(await send({ document: { type: "image_url", image_url: "https://example.com/scan.png" }, document_annotation_format: format }));
    expect(JSON.parse(response.document_annotation!)).toEqual({ title: "https://example.com/scan.png" });
    expect(response.pages).toHaveLength(1);
  });

  it("when Mistral rejects the body with a 422, then the caller gets a 422 naming the field, not retried", async () => {
    const error = failure(await send({ colour: "blue" } as Partial<OcrRequest>));
    expect([error.code, error.status, error.retryable]).toEqual(["invalid_request", 422, false]);
    expect(error.message).toBe("colour: Extra inputs are not permitted");
  });

  it("when Mistral rate-limits, then it is a retryable 429; a refused key is a retryable 502", async () => {
    up.script({ status: 429, headers: { "retry-after": "3" } });
    const limited = failure(await send({}));
    expect([limited.code, limited.status, limited.retryable]).toEqual(["upstream_rate_limited", 429, true]);
    const refused = failure(await send({}, context("wrong")));
    expect([refused.code, refused.status, refused.retryable]).toEqual(["upstream_error", 502, true]);
  });

  it("when the answer lacks pages, then it is malformed: a retryable 502", async () => {
    up.script({ status: 200, body: { model: UPSTREAM_MODEL, usage_info: { pages_processed: 1 } } });
    const error = failure(await send({}));
    expect([error.code, error.status, error.retryable]).toEqual(["upstream_error", 502, true]);
  });

  it("when the upstream names its own model in an error, then the caller sees the public name", async () => {
    up.script({ status: 400, body: { object: "error", message: `Model ${UPSTREAM_MODEL} cannot read this file`, type: "invalid_request_error" } });
    expect(failure(await send({})).message).toBe(`Model ${PUBLIC_MODEL} cannot read this file`);
  });
});

describe("mistralErrorBody", () => {
  it("when the body is not FastAPI's detail list, then it is left as it is", () => {
    expect(mistralErrorBody('{"message":"Unauthorized"}')).toBe('{"message":"Unauthorized"}');
    expect(mistralErrorBody("<html>")).toBe("<html>");
  });
});
