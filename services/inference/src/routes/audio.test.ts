import { assertOpenAI, speechBytes, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { readTranscriptionForm } from "@gw/service-kit";
import { multipart, sseData, reportedTokens, startRouteTestService, type RouteTestService } from "./route-test-service";

const UPSTREAM_KEY = "sk-audio-route-upstream";
const LIMIT = 64 * 1024;
let upstream: UpstreamEmulator;
let service: RouteTestService;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  service = await startRouteTestService({
    upstreams: { up: { kind: "openai", url: upstream.url, key: UPSTREAM_KEY } },
    bodyLimitBytes: LIMIT,
    models: {
      "tts-local": { type: "speech", provider: "up", model: "tts-1" },
      "stt-local": { type: "transcription", provider: "up", model: "gpt-4o-transcribe" },
      "whisper-local": { type: "transcription", provider: "up", model: "whisper-1" },
    },
  });
});
afterAll(async () => {
  await service?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

/** Every byte value: a text round trip anywhere on the way would change it. */
const audio = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 13) & 0xff));

function form(fields: Record<string, string | string[]>, file: Blob | null = new Blob([audio], { type: "audio/wav" })): FormData {
  const data = new FormData();
  if (file) data.append("file", file, "clip.wav");
  for (const [name, value] of Object.entries(fields)) for (const v of [value].flat()) data.append(name, v);
  return data;
}

async function transcribe(data: FormData) {
  const { body, contentType } = await multipart(data);
  return service.post("/v1/audio/transcriptions", body, { "content-type": contentType });
}

/** The multipart form the upstream received, parsed back. */
async function sentForm(): Promise<FormData> {
  const sent = upstream.requests.at(-1);
  return new Response(new Uint8Array(sent?.body as Buffer), { headers: { "content-type": String(sent?.headers["content-type"]) } }).formData();
}

describe("POST /v1/audio/speech", () => {
  it("when speech is asked, then the upstream's bytes and content type come through unchanged, with no usage reported", async () => {
    const request = { model: "tts-local", input: "hello", voice: "alloy", response_format: "wav" };
    const answer = await service.post("/v1/audio/speech", request);
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toBe("audio/wav");
    expect(answer.body.equals(speechBytes(request))).toBe(true);
    expect(reportedTokens(answer.headers)).toBeUndefined();
    const sent = upstream.requests.at(-1);
    expect(sent?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(sent?.body).toEqual({ ...request, model: "tts-1" });
  });

  it.each([
    [{ model: "tts-local", input: "hi" }, "voice"],
    [{ model: "tts-local", voice: "alloy" }, "input"],
    [{ model: "tts-local", input: "hi", voice: "alloy", response_format: "ogg" }, "response_format"],
    [{ model: "tts-local", input: "hi", voice: "alloy", speed: 9 }, "speed"],
  ])("when the body is %j, then a 400 names %s", async (body, param) => {
    const answer = await service.post("/v1/audio/speech", body);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param } });
    expect(upstream.requests).toHaveLength(0);
  });

  it("when a transcription model is named, then it is a 400 on the model", async () => {
    const answer = await service.post("/v1/audio/speech", { model: "stt-local", input: "hi", voice: "alloy" });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param: "model" } });
  });

  it("when the upstream is down, then the error is a JSON envelope, not audio", async () => {
    upstream.script({ status: 503 });
    const answer = await service.post("/v1/audio/speech", { model: "tts-local", input: "hi", voice: "alloy" });
    expect(answer.status).toBe(503);
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
  });
});

describe("POST /v1/audio/transcriptions", () => {
  it("when a file is sent, then the upstream gets the same bytes and fields with its model name, and the token usage is reported", async () => {
    const answer = await transcribe(form({ model: "stt-local", language: "en", "include[]": "logprobs" }));
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.text) as { text: string; usage: { total_tokens: number } };
    assertOpenAI("CreateTranscriptionResponseJson", body);
    expect(body.text).toBe("Transcribed 4096 bytes from clip.wav.");
    expect(reportedTokens(answer.headers)).toBe(String(body.usage.total_tokens));

    const sent = upstream.requests.at(-1);
    expect(sent?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    const received = await sentForm();
    expect(received.get("model")).toBe("gpt-4o-transcribe");
    expect(received.get("language")).toBe("en");
    expect(received.get("include[]")).toBe("logprobs");
    const file = received.get("file") as File;
    expect(file.name).toBe("clip.wav");
    expect(file.type).toBe("audio/wav");
    expect(Buffer.from(await file.arrayBuffer()).equals(audio)).toBe(true);
  });

  it("when whisper answers verbose_json, then it passes through and seconds are not reported as tokens", async () => {
    const answer = await transcribe(form({ model: "whisper-local", response_format: "verbose_json", "timestamp_granularities[]": ["word", "segment"] }));
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.text) as { words: unknown[]; segments: unknown[] };
    assertOpenAI("CreateTranscriptionResponseVerboseJson", body);
    expect(body.words.length).toBeGreaterThan(0);
    expect(body.segments).toHaveLength(1);
    expect(reportedTokens(answer.headers)).toBeUndefined();
    expect((await sentForm()).getAll("timestamp_granularities[]")).toEqual(["word", "segment"]);
  });

  it.each([
    ["text", "Transcribed 4096 bytes from clip.wav.\n"],
    ["srt", "1\n00:00:00,000 --> 00:00:00,260\nTranscribed 4096 bytes from clip.wav.\n\n"],
    ["vtt", "WEBVTT\n\n00:00:00.000 --> 00:00:00.260\nTranscribed 4096 bytes from clip.wav.\n\n"],
  ])("when %s is asked, then the upstream's text comes back with its text content type", async (format, text) => {
    const answer = await transcribe(form({ model: "whisper-local", response_format: format }));
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toMatch(/^text\/plain/);
    expect(answer.text).toBe(text);
  });

  it("when streamed, then the transcript events are relayed and the usage goes in the trailer", async () => {
    const answer = await transcribe(form({ model: "stt-local", stream: "true" }));
    expect(answer.status).toBe(200);
    const events = sseData(answer.text) as { type: string; usage?: { total_tokens: number } }[];
    expect(events.at(-1)?.type).toBe("transcript.text.done");
    expect(events.filter((e) => e.type === "transcript.text.delta").length).toBeGreaterThan(1);
    expect(reportedTokens(answer.trailers)).toBe(String(events.at(-1)?.usage?.total_tokens));
  });

  it("when the file is missing, then a 400 names file", async () => {
    const answer = await transcribe(form({ model: "stt-local" }, null));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { type: "invalid_request_error", param: "file" } });
    expect(upstream.requests).toHaveLength(0);
  });

  it("when the file is sent as a text field, then a 400 names file", async () => {
    const data = form({ model: "stt-local" }, null);
    data.append("file", "not a file");
    const answer = await transcribe(data);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param: "file" } });
  });

  it.each([
    [{}, "model"],
    [{ model: "stt-local", response_format: "mp3" }, "response_format"],
    [{ model: "stt-local", temperature: "hot" }, "temperature"],
  ])("when the fields are %j, then a 400 names %s", async (fields, param) => {
    const answer = await transcribe(form(fields));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param } });
  });

  it("when the body is JSON rather than a form, then it is a 400", async () => {
    const answer = await service.post("/v1/audio/transcriptions", { model: "stt-local", file: "x" });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { type: "invalid_request_error" } });
  });

  it("when the form is larger than the body limit, then it is a 413 and the upstream is not called", async () => {
    const answer = await transcribe(form({ model: "stt-local" }, new Blob([Buffer.alloc(LIMIT + 1)])));
    expect(answer.status).toBe(413);
    expect(upstream.requests).toHaveLength(0);
  });

  it("when a speech model is named, then it is a 400 on the model", async () => {
    const answer = await transcribe(form({ model: "tts-local" }));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param: "model" } });
  });
});

describe("readTranscriptionForm", () => {
  it("when the multipart body is truncated, then it is a 400, not a 500", async () => {
    const { body, contentType } = await multipart(form({ model: "m" }));
    await expect(readTranscriptionForm(contentType, body.subarray(0, body.length - 20))).rejects.toMatchObject({ status: 400 });
  });

  it("when the content type has no boundary, then it is a 400", async () => {
    await expect(readTranscriptionForm("multipart/form-data", Buffer.from("x"))).rejects.toMatchObject({ status: 400 });
  });

  it("when fields repeat, then every entry is kept in order while the checked value is the last", async () => {
    const { body, contentType } = await multipart(form({ model: ["a", "b"], "include[]": ["x", "y"] }));
    const upload = await readTranscriptionForm(contentType, body);
    expect(upload.form.model).toBe("b");
    expect(upload.entries.map(([name]) => name)).toEqual(["file", "model", "model", "include[]", "include[]"]);
  });
});
