import { type CallOutcome, internalHeaders } from "@gw/contracts";
import { readCallOutcome } from "@gw/service-kit";
import { freePort, startAnthropicUpstream, startMistralUpstream, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { multipart, type RawAnswer, sseData, startRouteTestService, type RouteTestService } from "../routes/route-test-service";

/**
 * What inference tells ingress about each call (the `x-gw-outcome` header, or trailer on streams):
 * the deployment that answered, the attempts, and the usage exactly as the provider reported it,
 * in the ledger's convention (input counts cached reads and cache writes).
 */

let openai: UpstreamEmulator;
let anthropic: UpstreamEmulator;
let mistral: UpstreamEmulator;
let service: RouteTestService;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: "sk-oa" });
  anthropic = await startAnthropicUpstream({ apiKey: "sk-ant" });
  mistral = await startMistralUpstream({ apiKey: "sk-mi" });
  // Nothing listens there: every call to it fails before an answer.
  const closed = await freePort();
  service = await startRouteTestService({
    upstreams: {
      oa: { kind: "openai", url: openai.url, key: "sk-oa", maxRetries: 1 },
      ant: { kind: "anthropic", url: anthropic.url, key: "sk-ant" },
      mi: { kind: "mistral", url: mistral.url, key: "sk-mi" },
      down: { kind: "openai", url: `http://127.0.0.1:${closed}`, key: "sk-down", maxRetries: 0 },
    },
    models: {
      gpt: { type: "chat", provider: "oa", model: "gpt-4o-mini" },
      unreachable: { type: "chat", provider: "down", model: "gpt-4o-mini" },
      claude: { type: "chat", provider: "ant", model: "claude-sonnet-4-5" },
      embed: { type: "embedding", provider: "oa", model: "text-embedding-3-small" },
      image: { type: "image", provider: "oa", model: "gpt-image-1" },
      tts: { type: "speech", provider: "oa", model: "tts-1" },
      stt: { type: "transcription", provider: "oa", model: "whisper-1" },
      ocr: { type: "ocr", provider: "mi", model: "mistral-ocr-latest" },
    },
  });
});

afterAll(async () => {
  await service?.stop();
  await Promise.all([openai?.close(), anthropic?.close(), mistral?.close()]);
});

beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

const messages = [{ role: "user", content: "how many tokens is this question" }];

function outcomeOf(answer: RawAnswer, where: "header" | "trailer" = "header"): CallOutcome {
  const text = where === "header" ? answer.headers[internalHeaders.outcome] : answer.trailers[internalHeaders.outcome];
  expect(typeof text, `the outcome ${where}`).toBe("string");
  const outcome = readCallOutcome(text);
  expect(outcome, `the outcome ${where} is well-formed: ${String(text)}`).toBeDefined();
  return outcome!;
}

interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

function fromOpenAI(u: OpenAIUsage) {
  return {
    input_tokens: u.prompt_tokens,
    output_tokens: u.completion_tokens,
    cached_input_tokens: u.prompt_tokens_details?.cached_tokens,
    reasoning_tokens: u.completion_tokens_details?.reasoning_tokens,
  };
}

describe("when a chat call is answered by an OpenAI-kind upstream", () => {
  it("then the outcome names the deployment, one attempt, and the usage the upstream reported", async () => {
    const answer = await service.post("/v1/chat/completions", { model: "gpt", messages });
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.text) as { usage: OpenAIUsage };
    const outcome = outcomeOf(answer);
    expect(outcome).toMatchObject({ provider: "oa", upstream_model: "gpt-4o-mini", attempts: 1 });
    expect(outcome.usage).toEqual(JSON.parse(JSON.stringify(fromOpenAI(body.usage))));
    expect(outcome.usage?.input_tokens).toBeGreaterThan(0);
    expect(outcome.upstream_ms).toBeGreaterThanOrEqual(0);
    expect(outcome.ttft_ms).toBeUndefined();
  });

  it("then a stream's outcome comes in the trailer, with the usage chunk's numbers and a time to first token", async () => {
    const answer = await service.post("/v1/chat/completions", { model: "gpt", messages, stream: true, stream_options: { include_usage: true } });
    const usage = sseData(answer.text).find((c) => c.usage)?.usage as OpenAIUsage;
    expect(usage.completion_tokens).toBeGreaterThan(0);
    const outcome = outcomeOf(answer, "trailer");
    expect(outcome.usage).toEqual(JSON.parse(JSON.stringify(fromOpenAI(usage))));
    expect(outcome.ttft_ms).toBeGreaterThanOrEqual(0);
    expect(answer.headers[internalHeaders.outcome]).toBeUndefined();
  });

  it("then a retried call counts both attempts", async () => {
    openai.script({ status: 503 });
    const answer = await service.post("/v1/chat/completions", { model: "gpt", messages });
    expect(answer.status).toBe(200);
    expect(outcomeOf(answer)).toMatchObject({ provider: "oa", attempts: 2 });
  });

  it("then a failure still tells the deployment and the error's type, and no usage", async () => {
    openai.script({ status: 400 });
    const answer = await service.post("/v1/chat/completions", { model: "gpt", messages });
    expect(answer.status).toBe(400);
    const outcome = outcomeOf(answer);
    expect(outcome).toMatchObject({ provider: "oa", attempts: 1 });
    expect(outcome.usage).toBeUndefined();
    expect(answer.headers[internalHeaders.errorType]).toBe((JSON.parse(answer.text) as { error: { type: string } }).error.type);
  });
});

describe("when the upstream cannot be reached", () => {
  it("then the outcome still counts the attempt and the time it took, with no usage", async () => {
    const answer = await service.post("/v1/chat/completions", { model: "unreachable", messages });
    expect(answer.status).toBeGreaterThanOrEqual(500);
    const outcome = outcomeOf(answer);
    expect(outcome).toMatchObject({ provider: "down", upstream_model: "gpt-4o-mini", attempts: 1 });
    // A refused connection still takes some microseconds: the failed attempt's time is counted.
    expect(outcome.upstream_ms).toBeGreaterThan(0);
    expect(outcome.usage).toBeUndefined();
  });
});

describe("when a chat model served by Anthropic is called", () => {
  interface AnthropicUsage {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
  }
  const native = async () => {
    const answer = await service.post("/v1/messages", { model: "claude", max_tokens: 64, messages });
    return { answer, usage: (JSON.parse(answer.text) as { usage: AnthropicUsage }).usage };
  };
  const converted = (u: AnthropicUsage) => ({
    input_tokens: u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens,
    output_tokens: u.output_tokens,
    cached_input_tokens: u.cache_read_input_tokens,
    cache_write_tokens: u.cache_creation_input_tokens,
  });

  it("then on /v1/messages the input counts Anthropic's three input figures and keeps each cache figure as reported", async () => {
    const { answer, usage } = await native();
    expect(outcomeOf(answer)).toMatchObject({ provider: "ant", upstream_model: "claude-sonnet-4-5", attempts: 1, usage: converted(usage) });
  });

  it("then through /v1/chat/completions (translated) the outcome holds Anthropic's own figures, not the translated ones", async () => {
    const { usage } = await native();
    const answer = await service.post("/v1/chat/completions", { model: "claude", max_tokens: 64, messages });
    expect(answer.status).toBe(200);
    expect(outcomeOf(answer).usage).toEqual(converted(usage));
  });

  it("then a translated stream's trailer holds the message_start and message_delta figures", async () => {
    const { usage } = await native();
    const answer = await service.post("/v1/chat/completions", { model: "claude", max_tokens: 64, messages, stream: true });
    expect(answer.status).toBe(200);
    expect(outcomeOf(answer, "trailer").usage).toEqual(converted(usage));
  });
});

describe("when a call is billed in other units", () => {
  it("then embeddings report their input tokens", async () => {
    const answer = await service.post("/v1/embeddings", { model: "embed", input: ["one two three", "four"] });
    const body = JSON.parse(answer.text) as { usage: { prompt_tokens: number } };
    expect(outcomeOf(answer).usage).toEqual({ input_tokens: body.usage.prompt_tokens });
  });

  it("then an image generation reports the images made", async () => {
    const answer = await service.post("/v1/images/generations", { model: "image", prompt: "a red fox", n: 2 });
    expect(answer.status).toBe(200);
    expect(outcomeOf(answer).units).toEqual({ images: 2 });
  });

  it("then speech reports the characters of its input, astral ones counted once", async () => {
    const input = "héllo 👋 world";
    const answer = await service.post("/v1/audio/speech", { model: "tts", input, voice: "alloy" });
    expect(answer.status).toBe(200);
    const outcome = outcomeOf(answer);
    expect(outcome).toMatchObject({ provider: "oa", units: { characters: [...input].length } });
    expect(outcome.model).toBeUndefined();
  });

  it("then a whisper transcription reports the seconds the provider bills (its usage), and names its model (ingress cannot read a form)", async () => {
    const data = new FormData();
    data.append("file", new Blob([Buffer.alloc(2048, 7)], { type: "audio/wav" }), "clip.wav");
    data.append("model", "stt");
    data.append("response_format", "verbose_json");
    const { body, contentType } = await multipart(data);
    const answer = await service.post("/v1/audio/transcriptions", body, { "content-type": contentType });
    expect(answer.status).toBe(200);
    const reported = JSON.parse(answer.text) as { duration: number; usage: { type: string; seconds: number } };
    // Whisper bills whole seconds: `usage.seconds`, not the clip's exact `duration`, is the billed figure.
    expect(reported.usage.type).toBe("duration");
    const seconds = reported.usage.seconds;
    expect(seconds).toBeGreaterThan(0);
    expect(outcomeOf(answer)).toMatchObject({ model: "stt", units: { audio_seconds: seconds } });
  });

  it("then OCR reports the pages processed", async () => {
    const answer = await service.post("/v1/ocr", { model: "ocr", document: { type: "document_url", document_url: "https://example.com/a.pdf" } });
    expect(answer.status).toBe(200);
    const pages = (JSON.parse(answer.text) as { usage_info: { pages_processed: number } }).usage_info.pages_processed;
    expect(outcomeOf(answer).units).toEqual({ pages });
  });
});
