import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { UpstreamEmulator } from "./http-emulator";
import { startMistralUpstream } from "./mistral-upstream";

const KEY = "mistral-test-key";
let up: UpstreamEmulator;

beforeAll(async () => {
  up = await startMistralUpstream({ apiKey: KEY });
});
afterEach(() => up.reset());
afterAll(() => up.close());

async function post(path: string, body: unknown, auth: string | null = `Bearer ${KEY}`) {
  const res = await fetch(`${up.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const doc = { type: "document_url", document_url: "https://example.com/report.pdf", document_name: "report.pdf" };

describe("mistral emulator: POST /v1/ocr", () => {
  it("when the url ends in /v1, then it serves /v1/ocr", () => {
    expect(up.url).toMatch(/\/v1$/);
  });

  it("when the key is missing or wrong, then 401 Unauthorized", async () => {
    expect(await post("/ocr", { model: "mistral-ocr-latest", document: doc }, null)).toMatchObject({ status: 401, body: { message: "Unauthorized" } });
    expect(await post("/ocr", { model: "mistral-ocr-latest", document: doc }, "Bearer nope")).toMatchObject({ status: 401 });
  });

  it("when a document is read without pages, then every page comes back naming the document, with usage", async () => {
    const { status, body } = await post("/ocr", { model: "mistral-ocr-latest", document: doc });
    expect(status).toBe(200);
    const pages = body.pages as { index: number; markdown: string; images: { image_base64: unknown }[]; dimensions: unknown }[];
    expect(pages.map((p) => p.index)).toEqual([0, 1, 2]);
    expect(pages[0]!.markdown).toContain("report.pdf");
    expect(pages[0]!.images[0]!.image_base64).toBeNull();
    expect(pages[0]!.dimensions).toEqual({ dpi: 200, height: 2200, width: 1700 });
    expect(body).toMatchObject({ model: "mistral-ocr-latest-2505", document_annotation: null, usage_info: { pages_processed: 3 } });
  });

  it("when pages, include_image_base64, image_limit and an annotation format are given, then they are honoured", async () => {
    const { body } = await post("/ocr", {
      model: "mistral-ocr-latest",
      document: { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      pages: [4, 7],
      include_image_base64: true,
      image_limit: 1,
      document_annotation_format: { type: "json_schema", json_schema: { name: "doc", schema: { type: "object", properties: { title: { type: "string" } } } } },
    });
    const pages = body.pages as { index: number; markdown: string; images: { image_base64: string }[] }[];
    expect(pages.map((p) => p.index)).toEqual([4, 7]);
    expect(pages[0]!.markdown).toContain("data:image/png");
    expect(pages[0]!.markdown).not.toContain("AAAA");
    expect(pages[0]!.images[0]!.image_base64).toMatch(/^data:image\/png;base64,/);
    expect(pages[1]!.images).toEqual([]);
    expect(JSON.parse(body.document_annotation as string)).toEqual({ title: "data:image/png" });
    expect(body.usage_info).toMatchObject({ pages_processed: 2 });
  });

  it("when the body is bad, then 422 in Mistral's envelope with FastAPI details naming the field", async () => {
    const { status, body } = await post("/ocr", { model: "m", document: { type: "document_url" }, pages: [-1], colour: true });
    expect(status).toBe(422);
    expect(body).toMatchObject({ object: "error", type: "invalid_request_error" });
    const locs = (body.message as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc.join("."));
    expect(locs).toEqual(["body.colour", "body.document.document_url", "body.pages"]);
  });

  it("when a failure is scripted, then it is answered in Mistral's envelope", async () => {
    up.script({ status: 429 });
    expect(await post("/ocr", { model: "m", document: doc })).toMatchObject({
      status: 429,
      body: { object: "error", message: "Requests rate limit exceeded" },
    });
    expect((await post("/ocr", { model: "m", document: doc })).status).toBe(200);
  });
});

describe("mistral emulator: POST /v1/chat/completions", () => {
  it("when a chat completion is asked for, then it answers in the OpenAI-compatible shape", async () => {
    const { status, body } = await post("/chat/completions", { model: "mistral-small-latest", messages: [{ role: "user", content: "Hello" }] });
    expect(status).toBe(200);
    expect(body).toMatchObject({ object: "chat.completion", model: "mistral-small-latest", choices: [{ message: { role: "assistant" } }] });
  });

  it("when an OpenAI-only field such as stream_options is sent, then 422 extra_forbidden naming it", async () => {
    const { status, body } = await post("/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(status).toBe(422);
    expect(body).toMatchObject({ object: "error", message: { detail: [{ type: "extra_forbidden", loc: ["body", "stream_options"] }] } });
  });

  it("when streamed, then usage rides on the finish_reason chunk and no chunk carries usage: null", async () => {
    const res = await fetch(`${up.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "Hello there" }], stream: true }),
    });
    const chunks = (await res.text())
      .split("\n\n")
      .filter((f) => f.startsWith("data: {"))
      .map((f) => JSON.parse(f.slice(6)) as Record<string, unknown>);
    const last = chunks[chunks.length - 1]!;
    expect(last).toMatchObject({ choices: [{ finish_reason: "stop" }], usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) } });
    expect(chunks.slice(0, -1).every((c) => !("usage" in c))).toBe(true);
  });
});
