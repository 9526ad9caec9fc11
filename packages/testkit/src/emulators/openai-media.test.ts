import OpenAI, { toFile } from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI } from "../openapi/validate";
import type { UpstreamEmulator } from "./http-emulator";
import { speechBytes } from "./openai-audio";
import { TINY_PNG_BASE64 } from "./openai-images";
import { startOpenAIUpstream } from "./openai-upstream";

let up: UpstreamEmulator;
let client: OpenAI;

beforeAll(async () => {
  up = await startOpenAIUpstream({ apiKey: "sk-media-key-123456" });
  client = new OpenAI({ baseURL: up.url, apiKey: "sk-media-key-123456", maxRetries: 0 });
});
afterEach(() => up.reset());
afterAll(() => up.close());

/** Every byte value, so a text round trip anywhere on the way would show. */
const audio = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 7) & 0xff));

describe("images", () => {
  it("when a GPT image model is asked, then b64 images come back with token usage, spec-valid", async () => {
    const res = await client.images.generate({ model: "gpt-image-1", prompt: "a red fox", n: 2, size: "1024x1024" });
    assertOpenAI("ImagesResponse", res);
    expect(res.data).toHaveLength(2);
    expect(res.data?.[0]?.b64_json).toBe(TINY_PNG_BASE64);
    expect(res.usage).toMatchObject({ input_tokens: 3, output_tokens: 544, total_tokens: 547 });
  });

  it("when dall-e-3 is asked, then a url with a revised prompt comes back and no usage", async () => {
    const res = await client.images.generate({ model: "dall-e-3", prompt: "a red fox" });
    assertOpenAI("ImagesResponse", res);
    expect(res.data?.[0]?.url).toMatch(/^https:\/\//);
    expect(res.data?.[0]?.revised_prompt).toContain("a red fox");
    expect(res.usage).toBeUndefined();
  });

  it("when streamed, then partial images and a completed event with usage arrive as named events", async () => {
    const stream = await client.images.generate({ model: "gpt-image-1", prompt: "a fox", stream: true, partial_images: 2 });
    const types: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      assertOpenAI(event.type === "image_generation.completed" ? "ImageGenCompletedEvent" : "ImageGenPartialImageEvent", event);
    }
    expect(types).toEqual(["image_generation.partial_image", "image_generation.partial_image", "image_generation.completed"]);
  });

  it("when the prompt is missing, then a 400 names it", async () => {
    await expect(client.images.generate({ model: "gpt-image-1" } as never)).rejects.toMatchObject({ status: 400, param: "prompt" });
  });
});

describe("speech", () => {
  it("when speech is asked, then the audio bytes come back with the format's content type", async () => {
    const res = await client.audio.speech.create({ model: "tts-1", input: "hi", voice: "alloy", response_format: "wav" });
    expect(res.headers.get("content-type")).toBe("audio/wav");
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(speechBytes({ input: "hi", response_format: "wav" }))).toBe(true);
    expect(up.requests[0]?.chunksWritten).toBeGreaterThan(1);
  });

  it("when the voice is missing, then a 400 names it", async () => {
    await expect(client.audio.speech.create({ model: "tts-1", input: "hi" } as never)).rejects.toMatchObject({ status: 400, param: "voice" });
  });
});

describe("transcriptions", () => {
  const file = () => toFile(audio, "clip.wav", { type: "audio/wav" });

  it("when a file is sent, then the JSON answer names its exact size and the raw form is recorded as bytes", async () => {
    const res = await client.audio.transcriptions.create({ model: "gpt-4o-transcribe", file: await file() });
    assertOpenAI("CreateTranscriptionResponseJson", res);
    expect(res.text).toBe("Transcribed 1024 bytes from clip.wav.");
    expect(res.usage).toMatchObject({ type: "tokens" });
    const raw = up.requests[0]?.body;
    expect(Buffer.isBuffer(raw)).toBe(true);
    const form = await new Response(new Uint8Array(raw as Buffer), { headers: { "content-type": String(up.requests[0]?.headers["content-type"]) } }).formData();
    const sent = form.get("file") as File;
    expect(Buffer.from(await sent.arrayBuffer()).equals(audio)).toBe(true);
  });

  it("when verbose_json with word timestamps is asked, then words and usage in seconds come back", async () => {
    const res = await client.audio.transcriptions.create({
      model: "whisper-1",
      file: await file(),
      response_format: "verbose_json",
      timestamp_granularities: ["word"],
    });
    assertOpenAI("CreateTranscriptionResponseVerboseJson", res);
    expect(res.words?.length).toBeGreaterThan(0);
    expect(res.usage).toMatchObject({ type: "duration" });
  });

  it.each(["text", "srt", "vtt"] as const)("when %s is asked, then plain text comes back", async (format) => {
    const res = await client.audio.transcriptions.create({ model: "whisper-1", file: await file(), response_format: format });
    expect(typeof res).toBe("string");
    expect(res).toContain("Transcribed 1024 bytes from clip.wav.");
  });

  it("when streamed, then text deltas and a done event with usage arrive", async () => {
    const stream = await client.audio.transcriptions.create({ model: "gpt-4o-mini-transcribe", file: await file(), stream: true });
    const events: { type: string }[] = [];
    for await (const event of stream) events.push(event);
    expect(events.at(-1)).toMatchObject({ type: "transcript.text.done", text: "Transcribed 1024 bytes from clip.wav." });
    expect(events.filter((e) => e.type === "transcript.text.delta").length).toBeGreaterThan(1);
  });

  it("when the file is missing, then a 400 comes back", async () => {
    const res = await fetch(`${up.url}/audio/transcriptions`, {
      method: "POST",
      headers: { authorization: "Bearer sk-media-key-123456" },
      body: (() => {
        const form = new FormData();
        form.append("model", "whisper-1");
        return form;
      })(),
    });
    expect(res.status).toBe(400);
  });
});
