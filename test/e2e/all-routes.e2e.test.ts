import Anthropic from "@anthropic-ai/sdk";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertOpenAI,
  speechBytes,
  startAnthropicUpstream,
  startCohereUpstream,
  startJinaUpstream,
  startMistralUpstream,
  startOpenAIUpstream,
  type UpstreamEmulator,
} from "@gw/testkit";
import { newWorkspaceKey, startGatewayTarget, targetNames, testPlans, type GatewayTarget } from "./targets";

/**
 * Every model route, once through the mesh and once through the embedded default, with the client a
 * user would call it with (the `openai` and `@anthropic-ai/sdk` packages, plain HTTP for rerank and
 * OCR) against every provider kind that serves it. The per-route files go deeper on the mesh; this
 * one shows both ways of running the gateway answer the same.
 */
const KEYS = { oa: "sk-all-oa", ant: "sk-ant-all", co: "co-all", jina: "jina_all", mis: "mis-all" };
const up: Record<keyof typeof KEYS, UpstreamEmulator> = {} as never;

beforeAll(async () => {
  up.oa = await startOpenAIUpstream({ apiKey: KEYS.oa });
  up.ant = await startAnthropicUpstream({ apiKey: KEYS.ant });
  up.co = await startCohereUpstream({ apiKey: KEYS.co });
  up.jina = await startJinaUpstream({ apiKey: KEYS.jina });
  up.mis = await startMistralUpstream({ apiKey: KEYS.mis });
});
afterAll(async () => {
  await Promise.all(Object.values(up).map((u) => u?.close()));
});

const config = () => `
providers:
  oa:   { kind: openai,    base_url: "${up.oa.url}",   api_key_env: ALL_OA }
  ant:  { kind: anthropic, base_url: "${up.ant.url}",  api_key_env: ALL_ANT }
  co:   { kind: cohere,    base_url: "${up.co.url}",   api_key_env: ALL_CO }
  jina: { kind: jina,      base_url: "${up.jina.url}", api_key_env: ALL_JINA }
  mis:  { kind: mistral,   base_url: "${up.mis.url}",  api_key_env: ALL_MIS }
models:
  gpt:      { type: chat,          routes: [{ provider: oa, model: gpt-4o-mini }] }
  claude:   { type: chat,          routes: [{ provider: ant, model: claude-sonnet-4-5 }] }
  mistral:  { type: chat,          routes: [{ provider: mis, model: mistral-small-latest }] }
  instruct: { type: completion,    routes: [{ provider: oa, model: gpt-3.5-turbo-instruct }] }
  embed-oa: { type: embedding,     routes: [{ provider: oa, model: text-embedding-3-small }] }
  embed-co: { type: embedding,     routes: [{ provider: co, model: embed-v4.0 }] }
  rr-co:    { type: rerank,        routes: [{ provider: co, model: rerank-v3.5 }] }
  rr-jina:  { type: rerank,        routes: [{ provider: jina, model: jina-reranker-v2-base-multilingual }] }
  image:    { type: image,         routes: [{ provider: oa, model: gpt-image-1 }] }
  tts:      { type: speech,        routes: [{ provider: oa, model: tts-1 }] }
  stt:      { type: transcription, routes: [{ provider: oa, model: whisper-1 }] }
  ocr:      { type: ocr,           routes: [{ provider: mis, model: mistral-ocr-latest }] }
${testPlans}`;
const env = { ALL_OA: KEYS.oa, ALL_ANT: KEYS.ant, ALL_CO: KEYS.co, ALL_JINA: KEYS.jina, ALL_MIS: KEYS.mis };

for (const name of targetNames) {
  describe(`when every model route is called through ${name}`, () => {
    let gw: GatewayTarget;
    let key: string;
    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), env);
      ({ key } = await newWorkspaceKey(gw, { name: "all-routes", models: ["*"] }));
    }, 180_000);
    afterAll(() => gw?.stop());

    const openai = () => new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
    const anthropic = () => new Anthropic({ apiKey: key, baseURL: gw.baseURL.replace(/\/v1$/, ""), maxRetries: 0 });
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${gw.baseURL}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    it("then every chat model answers on chat completions, messages and responses, plain and streamed", async () => {
      for (const model of ["gpt", "claude", "mistral"]) {
        const chat = await openai().chat.completions.create({ model, messages: [{ role: "user", content: `hi ${model}` }] });
        assertOpenAI("CreateChatCompletionResponse", chat);
        expect(chat.model).toBe(model);
        let streamed = "";
        for await (const c of await openai().chat.completions.create({ model, messages: [{ role: "user", content: "s" }], stream: true })) {
          streamed += c.choices[0]?.delta.content ?? "";
        }
        expect(streamed).not.toBe("");

        const msg = await anthropic().messages.create({ model, max_tokens: 50, messages: [{ role: "user", content: "hello" }] });
        expect(msg).toMatchObject({ type: "message", role: "assistant", model });
        const final = await anthropic()
          .messages.stream({ model, max_tokens: 50, messages: [{ role: "user", content: "stream" }] })
          .finalMessage();
        expect(final.content[0]).toMatchObject({ type: "text" });

        const response = await openai().responses.create({ model, input: "respond" });
        expect(response).toMatchObject({ object: "response", status: "completed", model });
        expect(response.output_text).not.toBe("");
      }
    });

    it("then completions, embeddings (both kinds), images, speech and transcription answer through the openai client", async () => {
      const completion = await openai().completions.create({ model: "instruct", prompt: "Say this", max_tokens: 10 });
      assertOpenAI("CreateCompletionResponse", completion);
      for (const model of ["embed-oa", "embed-co"]) {
        const emb = await openai().embeddings.create({ model, input: ["a", "b"], encoding_format: "float" });
        expect(emb.data.map((d) => d.index)).toEqual([0, 1]);
        expect(emb.model).toBe(model);
      }
      const image = await openai().images.generate({ model: "image", prompt: "a fox", n: 1 });
      assertOpenAI("ImagesResponse", image);
      const speech = await openai().audio.speech.create({ model: "tts", input: "Hello", voice: "alloy", response_format: "wav" });
      expect(Buffer.from(await speech.arrayBuffer()).equals(speechBytes({ input: "Hello", response_format: "wav" }))).toBe(true);
      const text = await openai().audio.transcriptions.create({ model: "stt", file: await toFile(Buffer.alloc(2048, 7), "a.wav", { type: "audio/wav" }) });
      expect(typeof text.text).toBe("string");
    });

    it("then rerank (Cohere and Jina) and OCR answer over plain HTTP", async () => {
      for (const model of ["rr-co", "rr-jina"]) {
        const { status, body } = await post("/rerank", {
          model,
          query: "capital of France",
          documents: ["Berlin", "Paris is the capital of France", "Rome"],
          top_n: 2,
          return_documents: true,
        });
        expect(status).toBe(200);
        const results = body.results as { index: number; relevance_score: number; document?: unknown }[];
        expect(results).toHaveLength(2);
        expect(results[0]!.relevance_score).toBeGreaterThanOrEqual(results[1]!.relevance_score);
        expect(results[0]!.document).toBeDefined();
      }
      const ocr = await post("/ocr", { model: "ocr", document: { type: "document_url", document_url: "https://example.com/a.pdf" } });
      expect(ocr).toMatchObject({ status: 200, body: { object: "ocr", model: "ocr" } });
    });
  });
}
