import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI, speechBytes, startOpenAIUpstream, TINY_PNG_BASE64 } from "@gw/testkit";
import { adminClient, startTestMesh, type RunningMesh } from "./harness";

/**
 * Legacy completions, image generation, speech and transcriptions with the official `openai`
 * client, through the four services, against an OpenAI-kind upstream.
 */
const UPSTREAM_KEY = "sk-upstream-openai-routes";

let up: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let gw: RunningMesh;
let key: string;

/** Every byte value, so a text round trip anywhere on the way (ingress, inference) would show. */
const audio = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 29 + 7) & 0xff));

beforeAll(async () => {
  up = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  gw = await startTestMesh(
    `
providers:
  oa: { kind: openai, base_url: "${up.url}", api_key_env: E2E_OPENAI_KEY }
models:
  instruct-e2e: { type: completion,    routes: [{ provider: oa, model: gpt-3.5-turbo-instruct }] }
  image-e2e:    { type: image,         routes: [{ provider: oa, model: gpt-image-1 }] }
  tts-e2e:      { type: speech,        routes: [{ provider: oa, model: tts-1 }] }
  stt-e2e:      { type: transcription, routes: [{ provider: oa, model: gpt-4o-transcribe }] }
  whisper-e2e:  { type: transcription, routes: [{ provider: oa, model: whisper-1 }] }
  hidden-stt:   { type: transcription, routes: [{ provider: oa, model: whisper-1 }] }
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
    { E2E_OPENAI_KEY: UPSTREAM_KEY },
  );
  const admin = adminClient(gw.adminURL, gw.adminToken);
  const ws = await admin<{ id: string }>("POST", "/admin/workspaces", {
    name: "openai-routes",
    plan: "pro",
    models: ["instruct-e2e", "image-e2e", "tts-e2e", "stt-e2e", "whisper-e2e"],
  });
  key = (await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {})).key;
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await up?.close();
});

const openai = () => new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
const clip = () => toFile(audio, "clip.wav", { type: "audio/wav" });

describe("when the openai client calls /v1/completions", () => {
  it("then a plain completion comes back spec-valid under the public model name, with usage", async () => {
    const completion = await openai().completions.create({ model: "instruct-e2e", prompt: "Say this is a test", max_tokens: 20 });
    assertOpenAI("CreateCompletionResponse", completion);
    expect(completion.model).toBe("instruct-e2e");
    expect(completion.choices[0]?.text).toBe("Echo: Say this is a test");
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
    expect(up.requests.at(-1)?.body).toMatchObject({ model: "gpt-3.5-turbo-instruct" });
  });

  it("then a stream yields text_completion chunks that join to the same text, with no usage unless asked", async () => {
    const stream = await openai().completions.create({ model: "instruct-e2e", prompt: "stream me please", max_tokens: 20, stream: true });
    let text = "";
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk).toMatchObject({ object: "text_completion", model: "instruct-e2e" });
      expect(chunk.usage).toBeUndefined();
      text += chunk.choices[0]?.text ?? "";
    }
    expect(chunks).toBeGreaterThan(1);
    expect(text).toBe("Echo: stream me please");

    const withUsage = await openai().completions.create({
      model: "instruct-e2e",
      prompt: "count",
      stream: true,
      stream_options: { include_usage: true },
    });
    let total = 0;
    for await (const chunk of withUsage) total = chunk.usage?.total_tokens ?? total;
    expect(total).toBeGreaterThan(0);
  });

  it("then a body without a prompt is a 400 naming it, and nothing reaches the upstream", async () => {
    const before = up.requests.length;
    const err = await openai()
      .completions.create({ model: "instruct-e2e" } as never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, param: "prompt" });
    expect(up.requests.length).toBe(before);
  });
});

describe("when the openai client calls /v1/images/generations", () => {
  it("then the images come back spec-valid with the upstream's usage", async () => {
    const res = await openai().images.generate({ model: "image-e2e", prompt: "a red fox in the snow", n: 2, size: "1024x1024" });
    assertOpenAI("ImagesResponse", res);
    expect(res.data?.map((d) => d.b64_json)).toEqual([TINY_PNG_BASE64, TINY_PNG_BASE64]);
    expect(res.usage?.total_tokens).toBeGreaterThan(0);
    expect(up.requests.at(-1)?.body).toMatchObject({ model: "gpt-image-1", prompt: "a red fox in the snow" });
  });

  it("then a stream yields the partial and completed events", async () => {
    const stream = await openai().images.generate({ model: "image-e2e", prompt: "a fox", stream: true, partial_images: 1 });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toEqual(["image_generation.partial_image", "image_generation.completed"]);
  });

  it("then a body without a prompt is a 400 naming it", async () => {
    await expect(openai().images.generate({ model: "image-e2e" } as never)).rejects.toMatchObject({ status: 400, param: "prompt" });
  });
});

describe("when the openai client calls /v1/audio/speech", () => {
  it("then the audio bytes arrive unchanged with the upstream's content type", async () => {
    const res = await openai().audio.speech.create({ model: "tts-e2e", input: "Hello there", voice: "alloy", response_format: "wav" });
    expect(res.headers.get("content-type")).toBe("audio/wav");
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(speechBytes({ input: "Hello there", response_format: "wav" }))).toBe(true);
    expect(up.requests.at(-1)?.body).toMatchObject({ model: "tts-1", voice: "alloy" });
  });

  it("then a body without a voice is a 400 naming it", async () => {
    await expect(openai().audio.speech.create({ model: "tts-e2e", input: "hi" } as never)).rejects.toMatchObject({ status: 400, param: "voice" });
  });
});

describe("when the openai client calls /v1/audio/transcriptions", () => {
  it("then a generated file is transcribed, the upstream got its exact bytes, and the answer is spec-valid", async () => {
    const res = await openai().audio.transcriptions.create({ model: "stt-e2e", file: await clip(), language: "en" });
    assertOpenAI("CreateTranscriptionResponseJson", res);
    expect(res.text).toBe(`Transcribed ${audio.length} bytes from clip.wav.`);
    const sent = up.requests.at(-1);
    const form = await new Response(new Uint8Array(sent?.body as Buffer), { headers: { "content-type": String(sent?.headers["content-type"]) } }).formData();
    expect(form.get("model")).toBe("gpt-4o-transcribe");
    expect(form.get("language")).toBe("en");
    const file = form.get("file") as File;
    expect(file.name).toBe("clip.wav");
    expect(Buffer.from(await file.arrayBuffer()).equals(audio)).toBe(true);
  });

  it("then verbose_json, text, srt and vtt come back in their own shapes", async () => {
    const verbose = await openai().audio.transcriptions.create({
      model: "whisper-e2e",
      file: await clip(),
      response_format: "verbose_json",
      timestamp_granularities: ["word"],
    });
    assertOpenAI("CreateTranscriptionResponseVerboseJson", verbose);
    expect(verbose.words?.length).toBeGreaterThan(0);
    const text = await openai().audio.transcriptions.create({ model: "whisper-e2e", file: await clip(), response_format: "text" });
    expect(text).toBe(`Transcribed ${audio.length} bytes from clip.wav.\n`);
    const srt = await openai().audio.transcriptions.create({ model: "whisper-e2e", file: await clip(), response_format: "srt" });
    expect(srt).toMatch(/^1\n00:00:00,000 --> /);
    const vtt = await openai().audio.transcriptions.create({ model: "whisper-e2e", file: await clip(), response_format: "vtt" });
    expect(vtt).toMatch(/^WEBVTT\n/);
  });

  it("then a stream yields the transcript deltas and the done event", async () => {
    const stream = await openai().audio.transcriptions.create({ model: "stt-e2e", file: await clip(), stream: true });
    let text = "";
    let done = "";
    for await (const event of stream) {
      if (event.type === "transcript.text.delta") text += event.delta;
      if (event.type === "transcript.text.done") done = event.text;
    }
    expect(text).toBe(done);
    expect(done).toContain("clip.wav");
  });

  it("then a form without a file is a 400 naming it, and nothing reaches the upstream", async () => {
    const before = up.requests.length;
    const form = new FormData();
    form.append("model", "stt-e2e");
    const res = await fetch(`${gw.baseURL}/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { type: "invalid_request_error", param: "file" } });
    expect(up.requests.length).toBe(before);
  });

  it("then a form without a model is a 400 naming it", async () => {
    const form = new FormData();
    form.append("file", new Blob([audio]), "clip.wav");
    const res = await fetch(`${gw.baseURL}/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { param: "model" } });
  });

  it("then a model outside the key's list is refused (404: ingress checks JSON bodies only, so inference answers)", async () => {
    const err = await openai()
      .audio.transcriptions.create({ model: "hidden-stt", file: await clip() })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, code: "model_not_found" });
  });
});

describe("when any of these routes reaches the upstream", () => {
  it("then the upstream saw the server's key, never the caller's, and no internal header reached the caller", async () => {
    expect(up.requests.length).toBeGreaterThan(5);
    for (const request of up.requests) {
      expect(request.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
      expect(JSON.stringify(request.headers)).not.toContain(key);
    }
    const res = await fetch(`${gw.baseURL}/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "instruct-e2e", prompt: "hi" }),
    });
    expect(res.status).toBe(200);
    for (const name of res.headers.keys()) expect(name.startsWith("x-gw-")).toBe(false);
  });
});
