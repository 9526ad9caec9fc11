import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMistralUpstream, type UpstreamEmulator } from "@gw/testkit";
import { adminClient, startTestMesh, type RunningMesh } from "./harness";

/**
 * OCR through the four services: plain fetch on /v1/ocr against a Mistral-kind model (Mistral's
 * shape, as LiteLLM serves it), and the openai client on a chat model served by the same Mistral
 * provider (its chat API is OpenAI-compatible). The upstream must see the gateway's own credential,
 * never the caller's key.
 */
const MISTRAL_KEY = "mistral-upstream-ocr";

let up: UpstreamEmulator;
let gw: RunningMesh;
let key: string;

beforeAll(async () => {
  up = await startMistralUpstream({ apiKey: MISTRAL_KEY });
  gw = await startTestMesh(
    `
providers:
  mistral: { kind: mistral, base_url: "${up.url}", api_key_env: E2E_MISTRAL_KEY }
models:
  ocr-mistral:  { type: ocr,  routes: [{ provider: mistral, model: mistral-ocr-latest }] }
  chat-mistral: { type: chat, routes: [{ provider: mistral, model: mistral-small-latest }] }
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
    { E2E_MISTRAL_KEY: MISTRAL_KEY },
  );
  const admin = adminClient(gw.adminURL, gw.adminToken);
  const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "ocr", plan: "pro", models: ["ocr-mistral", "chat-mistral"] });
  key = (await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {})).key;
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await up?.close();
});

/** Every request the upstream saw carried the server's key, and none carried the caller's. */
function sawOnlyServerKey(): void {
  expect(up.requests.length).toBeGreaterThan(0);
  for (const seen of up.requests) {
    expect(seen.headers.authorization).toBe(`Bearer ${MISTRAL_KEY}`);
    expect(JSON.stringify(seen.headers)).not.toContain(key);
    expect(JSON.stringify(seen.body)).not.toContain(key);
  }
}

async function ocr(body: unknown) {
  const res = await fetch(`${gw.baseURL}/ocr`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const document = { type: "document_url", document_url: "https://example.com/annual-report.pdf", document_name: "annual-report.pdf" };

describe("when fetch reads a document with ocr-mistral", () => {
  it("then the requested pages come back in Mistral's shape, under the public model, with object ocr", async () => {
    const { status, headers, body } = await ocr({ model: "ocr-mistral", document, pages: [0, 2], include_image_base64: true });
    expect(status).toBe(200);
    expect(body).toMatchObject({ object: "ocr", model: "ocr-mistral", document_annotation: null, usage_info: { pages_processed: 2 } });
    const pages = body.pages as { index: number; markdown: string; images: { id: string; image_base64: string | null }[]; dimensions: unknown }[];
    expect(pages.map((p) => p.index)).toEqual([0, 2]);
    for (const page of pages) {
      expect(page.markdown).toContain("annual-report.pdf");
      expect(page.images[0]?.image_base64).toMatch(/^data:image\/png;base64,/);
      expect(page.dimensions).toEqual({ dpi: 200, height: 2200, width: 1700 });
    }
    // The upstream got its own model name; the internal usage header never reaches the caller.
    expect(up.requests.at(-1)?.body).toMatchObject({ model: "mistral-ocr-latest", pages: [0, 2] });
    expect([...headers.keys()].some((h) => h.startsWith("x-gw-"))).toBe(false);
    sawOnlyServerKey();
  });

  it("then an image works too, as a string or {url}", async () => {
    for (const image_url of ["https://example.com/scan.png", { url: "https://example.com/scan.png" }]) {
      const { status, body } = await ocr({ model: "ocr-mistral", document: { type: "image_url", image_url } });
      expect(status).toBe(200);
      expect(body.pages).toHaveLength(1);
    }
  });
});

describe("when an ocr body is bad", () => {
  it("then 400 names the field, in OpenAI's error envelope", async () => {
    const { status, body } = await ocr({ model: "ocr-mistral", document: { type: "document_url" } });
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: { type: "invalid_request_error", param: "document.document_url", code: "invalid_request" } });
  });

  it("then a file_id document is a 400 saying files cannot be uploaded through the gateway", async () => {
    const { status, body } = await ocr({ model: "ocr-mistral", document: { type: "file", file_id: "file-abc" } });
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: { param: "document.type", message: expect.stringContaining("cannot be uploaded through the gateway") } });
  });
});

describe("when the openai client chats with chat-mistral", () => {
  it("then Mistral's OpenAI-compatible chat answers under the public model, with the server's key", async () => {
    up.reset();
    const client = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: "chat-mistral", messages: [{ role: "user", content: "Hello" }] });
    expect(completion.model).toBe("chat-mistral");
    expect(completion.choices[0]?.message.role).toBe("assistant");
    expect(up.requests[0]?.path).toBe("/v1/chat/completions");
    expect(up.requests[0]?.body).toMatchObject({ model: "mistral-small-latest" });
    sawOnlyServerKey();
  });

  it("then a stream works although Mistral refuses stream_options, and usage shows only when asked for", async () => {
    up.reset();
    const client = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
    const plain = await client.chat.completions.create({ model: "chat-mistral", messages: [{ role: "user", content: "Hello" }], stream: true });
    const plainChunks = [];
    for await (const chunk of plain) plainChunks.push(chunk);
    expect(plainChunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).not.toBe("");
    expect(plainChunks.some((c) => c.usage)).toBe(false);
    expect(up.requests[0]?.body).not.toHaveProperty("stream_options");

    const counted = await client.chat.completions.create({
      model: "chat-mistral",
      messages: [{ role: "user", content: "Hello" }],
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 50,
    });
    let usage: unknown;
    for await (const chunk of counted) usage ??= chunk.usage;
    expect(usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
    expect(up.requests[1]?.body).toMatchObject({ max_tokens: 50 });
    expect(up.requests[1]?.body).not.toHaveProperty("max_completion_tokens");
  });

  it("then a parameter Mistral cannot honour is a 400 naming it, and nothing reaches Mistral", async () => {
    up.reset();
    const client = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
    const err = await client.chat.completions
      .create({ model: "chat-mistral", messages: [{ role: "user", content: "Hi" }], logprobs: true })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("logprobs");
    expect(up.requests).toHaveLength(0);
  });
});
