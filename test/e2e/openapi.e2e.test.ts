import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSpecValidator,
  startAnthropicUpstream,
  startCohereUpstream,
  startMistralUpstream,
  startOpenAIUpstream,
  startSerpApiUpstream,
  startTavilyUpstream,
  type UpstreamEmulator,
} from "@gw/testkit";
import { newWorkspaceKey, startGatewayTarget, testPlans, type GatewayTarget } from "./targets";

/**
 * The reference the gateway serves, held to the gateway itself: fetched from the public port with
 * no key, then every operation it documents called as it documents it (its examples, its
 * parameters, a valid key) against the embedded default and the providers' emulators. A route the
 * document invents answers 404; a status or content type it does not list, or a JSON answer its
 * schema refuses, means the reference no longer says what the gateway does.
 */
type Schema = { $ref?: string; properties?: Record<string, { format?: string }> };
type Parameter = { name: string; in: "path" | "query" | "header"; example?: string };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema; example: Record<string, unknown> }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
};
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const KEYS = { oa: "sk-doc-oa", ant: "sk-ant-doc", co: "co-doc", mis: "mis-doc", tav: "tvly-doc", serp: "serp-doc" };
const up: UpstreamEmulator[] = [];
let gw: GatewayTarget;
let origin: string;
let key: string;

// The public model names are the ones the document's examples use.
const config = (u: Record<keyof typeof KEYS, string>) => `
providers:
  oa:       { kind: openai,    base_url: "${u.oa}",   api_key_env: DOC_OA }
  ant:      { kind: anthropic, base_url: "${u.ant}",  api_key_env: DOC_ANT }
  co:       { kind: cohere,    base_url: "${u.co}",   api_key_env: DOC_CO }
  mis:      { kind: mistral,   base_url: "${u.mis}",  api_key_env: DOC_MIS }
  webtool:  { kind: tavily,    base_url: "${u.tav}",  api_key_env: DOC_TAV }
  serptool: { kind: serpapi,   base_url: "${u.serp}", api_key_env: DOC_SERP }
models:
  gpt-4o-mini:            { type: chat,          routes: [{ provider: oa, model: gpt-4o-mini }] }
  claude-sonnet-4-5:      { type: chat,          routes: [{ provider: ant, model: claude-sonnet-4-5 }] }
  gpt-3.5-turbo-instruct: { type: completion,    routes: [{ provider: oa, model: gpt-3.5-turbo-instruct }] }
  text-embedding-3-small: { type: embedding,     routes: [{ provider: oa, model: text-embedding-3-small }] }
  rerank-v3.5:            { type: rerank,        routes: [{ provider: co, model: rerank-v3.5 }] }
  gpt-image-1:            { type: image,         routes: [{ provider: oa, model: gpt-image-1 }] }
  tts-1:                  { type: speech,        routes: [{ provider: oa, model: tts-1 }] }
  whisper-1:              { type: transcription, routes: [{ provider: oa, model: whisper-1 }] }
  mistral-ocr-latest:     { type: ocr,           routes: [{ provider: mis, model: mistral-ocr-latest }] }
${testPlans}`;

beforeAll(async () => {
  const started = await Promise.all([
    startOpenAIUpstream({ apiKey: KEYS.oa }),
    startAnthropicUpstream({ apiKey: KEYS.ant }),
    startCohereUpstream({ apiKey: KEYS.co }),
    startMistralUpstream({ apiKey: KEYS.mis }),
    startTavilyUpstream({ apiKey: KEYS.tav }),
    startSerpApiUpstream({ apiKey: KEYS.serp }),
  ]);
  up.push(...started);
  const [oa, ant, co, mis, tav, serp] = started.map((u) => u.url) as string[];
  gw = await startGatewayTarget("the embedded default", config({ oa: oa!, ant: ant!, co: co!, mis: mis!, tav: tav!, serp: serp! }), {
    DOC_OA: KEYS.oa,
    DOC_ANT: KEYS.ant,
    DOC_CO: KEYS.co,
    DOC_MIS: KEYS.mis,
    DOC_TAV: KEYS.tav,
    DOC_SERP: KEYS.serp,
  });
  origin = gw.baseURL.replace(/\/v1$/, "");
  ({ key } = await newWorkspaceKey(gw, { name: "openapi-doc", models: ["*"] }));
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all(up.map((u) => u.close()));
});

describe("when the gateway's own API reference is used against it", () => {
  let doc: Document;

  it("then /openapi.json and /docs answer on the public port without a key", async () => {
    const res = await fetch(`${origin}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBeTruthy();
    doc = (await res.json()) as Document;
    expect(doc.openapi).toBe("3.1.0");
    const page = await fetch(`${origin}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
  });

  it("then every documented operation, called as documented, is served: no 404, a documented status and content type, a JSON answer its schema accepts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-openapi-"));
    const file = join(dir, "gateway-openapi.json");
    writeFileSync(file, JSON.stringify(doc));
    const schemas = createSpecValidator(file, "gateway");
    const jobs = new Map<string, string>();
    // Creations first, so each poll has a job of its own route to read; then actions on what was
    // created (a batch's cancel), reads, and deletions last.
    const rank = ({ path, method }: { path: string; method: string }) => (method === "post" ? (path.includes("{") ? 1 : 0) : method === "delete" ? 3 : 2);
    const operations = Object.entries(doc.paths)
      .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })))
      .sort((a, b) => rank(a) - rank(b));
    try {
      for (const { path, method, op } of operations) {
        const where = `${method.toUpperCase()} ${path}`;
        const res = await call(path, method, op, jobs.get(path.replace(/\/\{job_id\}$/, "")));
        const text = await res.text();
        expect(res.status, `${where}: ${text.slice(0, 300)}`).not.toBe(404);
        const documented = op.responses[String(res.status)];
        expect(documented, `${where} answered ${res.status}, which it does not document: ${text.slice(0, 300)}`).toBeDefined();
        if (res.status >= 300) continue;
        const type = (res.headers.get("content-type") ?? "").split(";")[0]!;
        expect(Object.keys(documented!.content ?? {}), where).toContain(type);
        const ref = documented!.content?.[type]?.schema.$ref;
        if (type === "application/json" && ref) schemas.assert(ref.split("/").pop()!, JSON.parse(text));
        const id = type === "application/json" ? (JSON.parse(text) as { id?: unknown }).id : undefined;
        if (method === "post" && typeof id === "string" && id.startsWith("job_")) jobs.set(path, id);
        // The file and the batch created here are what the Files and Batch operations after them name.
        if (method === "post" && typeof id === "string" && id.startsWith("file-")) created.file_id = id;
        if (method === "post" && typeof id === "string" && id.startsWith("batch_") && path === "/v1/batches") created.batch_id = id;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(jobs.size).toBe(11); // ten async model routes and research
    expect(Object.keys(created).sort()).toEqual(["batch_id", "file_id"]);
  });

  /** Ids the Files and Batch operations name: the file and the batch created by the calls before them. */
  const created: Record<string, string> = {};

  /** A batch input file of one line: the chat route's own documented example. */
  function batchInput(): string {
    const chat = doc.paths["/v1/chat/completions"]?.post?.requestBody?.content["application/json"]?.example;
    return `${JSON.stringify({ custom_id: "documented", method: "POST", url: "/v1/chat/completions", body: chat })}\n`;
  }

  /** The request the document describes: its parameters' examples, its body's example, a valid key. */
  async function call(path: string, method: string, op: Operation, jobId: string | undefined): Promise<Response> {
    let url = path;
    const query = new URLSearchParams();
    for (const p of op.parameters ?? []) {
      const value = p.name === "job_id" ? jobId : (created[p.name] ?? p.example);
      if (p.in === "path") url = url.replace(`{${p.name}}`, encodeURIComponent(value ?? ""));
      else if (p.in === "query" && value !== undefined) query.set(p.name, value);
    }
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    let body: string | FormData | undefined;
    const [type, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
    if (type === "application/json") {
      headers["content-type"] = type;
      const example = media!.example as Record<string, unknown>;
      body = JSON.stringify(path === "/v1/batches" ? { ...example, input_file_id: created.file_id } : example);
    } else if (type === "multipart/form-data") {
      const form = new FormData();
      for (const [name, value] of Object.entries(media!.example)) form.set(name, String(value));
      const schema = doc.components.schemas[media!.schema.$ref!.split("/").pop()!]!;
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        if (property.format === "binary" && path === "/v1/files") form.set(name, new Blob([batchInput()], { type: "application/jsonl" }), "requests.jsonl");
        else if (property.format === "binary") form.set(name, new Blob([new Uint8Array(2048).fill(7)], { type: "audio/wav" }), "a.wav");
      }
      body = form;
    }
    return fetch(`${origin}${url}${query.size > 0 ? `?${query}` : ""}`, { method: method.toUpperCase(), headers, body });
  }
});
