import type { Exchange } from "./http-emulator";
import { countTokens, isRecord, pieces } from "./synthetic";
import type { JsonObject } from "./synthetic";

/**
 * Audio (provider-wire-formats.md §3.10). Speech is a deterministic byte string per request, with
 * every byte value in it so that any text round trip on the way (utf-8, latin-1) shows up as a
 * mismatch. Transcriptions read the multipart form and "transcribe" the file as a sentence naming
 * its name and size, in the requested `response_format`.
 */

const speechContentTypes: Record<string, string> = {
  mp3: "audio/mpeg",
  opus: "audio/opus",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/pcm",
};

/** The 400 for a speech request this emulator refuses, or undefined when it is acceptable. */
export function speechRequestProblem(body: JsonObject): { message: string; param: string } | undefined {
  if (typeof body.input !== "string" || body.input === "") return { message: "Missing required parameter: 'input'.", param: "input" };
  if (typeof body.voice !== "string" && !(isRecord(body.voice) && typeof body.voice.id === "string")) {
    return { message: "Missing required parameter: 'voice'.", param: "voice" };
  }
  const format = body.response_format ?? "mp3";
  if (typeof format !== "string" || !(format in speechContentTypes)) {
    return { message: `Invalid value: '${String(format)}'. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav' and 'pcm'.`, param: "response_format" };
  }
  return undefined;
}

export function speechContentType(body: JsonObject): string {
  return speechContentTypes[typeof body.response_format === "string" ? body.response_format : "mp3"] ?? "audio/mpeg";
}

/**
 * The "audio" for a request: a format tag, then 256 bytes per input character (or `size` bytes in
 * all, when a script asks for a long answer), all values 0-255.
 */
export function speechBytes(body: JsonObject, size?: number): Buffer {
  const input = typeof body.input === "string" ? body.input : "";
  const format = typeof body.response_format === "string" ? body.response_format : "mp3";
  const tag = Buffer.from(format === "wav" ? "RIFF" : format === "mp3" ? "ID3\u0004" : `${format}:`, "latin1");
  const samples = Buffer.alloc(size !== undefined ? Math.max(0, size - tag.length) : 256 * Math.max(1, input.length));
  for (let i = 0; i < samples.length; i++) samples[i] = (i + (input.charCodeAt(Math.floor(i / 256)) || 0)) & 0xff;
  return Buffer.concat([tag, samples]);
}

/** Splits bytes into `parts` pieces, so a stream is really sent (and relayed) in several writes. */
export function byteChunks(bytes: Buffer, parts = 4): Buffer[] {
  const size = Math.max(1, Math.ceil(bytes.length / parts));
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

/** `stream_format: "sse"`: base64 audio deltas, then a done event with usage. [GUESS: data-only frames] */
export function speechFrames(body: JsonObject): string[] {
  const frames = byteChunks(speechBytes(body)).map((chunk) => `data: ${JSON.stringify({ type: "speech.audio.delta", audio: chunk.toString("base64") })}\n\n`);
  const input = Math.max(1, countTokens(String(body.input ?? "")));
  const output = Math.ceil(speechBytes(body).length / 64);
  frames.push(
    `data: ${JSON.stringify({ type: "speech.audio.done", usage: { input_tokens: input, output_tokens: output, total_tokens: input + output } })}\n\n`,
  );
  return frames;
}

/** Parses a multipart body (the raw bytes the emulator kept); undefined when it is not a form. */
export async function readTranscriptionForm(raw: unknown, contentType: string | undefined): Promise<FormData | undefined> {
  if (!Buffer.isBuffer(raw) || !contentType?.toLowerCase().startsWith("multipart/form-data")) return undefined;
  try {
    return await new Response(new Uint8Array(raw), { headers: { "content-type": contentType } }).formData();
  } catch {
    return undefined;
  }
}

export type TranscriptionAnswer =
  | { kind: "json"; body: JsonObject }
  | { kind: "text"; contentType: string; text: string }
  | { kind: "sse"; frames: string[] }
  | { kind: "error"; message: string; param: string | null };

const formats = new Set(["json", "text", "srt", "verbose_json", "vtt", "diarized_json"]);

/** What OpenAI would answer to this form (shapes from `CreateTranscriptionResponse*`). */
export function transcriptionAnswer(form: FormData): TranscriptionAnswer {
  const file = form.get("file");
  const model = form.get("model");
  if (!(file instanceof Blob)) {
    return { kind: "error", message: "1 validation error for Request\nbody -> file\n  field required (type=value_error.missing)", param: null };
  }
  if (typeof model !== "string" || model === "") return { kind: "error", message: "you must provide a model parameter", param: null };
  const format = String(form.get("response_format") ?? "json");
  if (!formats.has(format))
    return {
      kind: "error",
      message: `Invalid value: '${format}'. Supported values are: 'json', 'text', 'srt', 'verbose_json', 'vtt' and 'diarized_json'.`,
      param: "response_format",
    };

  const name = "name" in file && typeof file.name === "string" ? file.name : "blob";
  const text = `Transcribed ${file.size} bytes from ${name}.`;
  // 16 kB of audio a second (16 kHz, 8-bit mono), never under a tenth of a second.
  const duration = Math.max(0.1, Math.round((file.size / 16_000) * 100) / 100);
  const whisper = model.startsWith("whisper");
  const seconds = { type: "duration", seconds: Math.ceil(duration) };
  const audioTokens = Math.max(1, Math.ceil(file.size / 1_000));
  const promptTokens = countTokens(String(form.get("prompt") ?? ""));
  const outputTokens = countTokens(text);
  const tokens = {
    type: "tokens",
    input_tokens: audioTokens + promptTokens,
    input_token_details: { text_tokens: promptTokens, audio_tokens: audioTokens },
    output_tokens: outputTokens,
    total_tokens: audioTokens + promptTokens + outputTokens,
  };

  if (form.get("stream") === "true" && !whisper) {
    const frames = pieces(text).map((delta) => `data: ${JSON.stringify({ type: "transcript.text.delta", delta })}\n\n`);
    frames.push(`data: ${JSON.stringify({ type: "transcript.text.done", text, usage: tokens })}\n\n`);
    return { kind: "sse", frames };
  }
  const end = timestamp(duration);
  switch (format) {
    // [GUESS] OpenAI sends all three text formats as text/plain.
    case "text":
      return { kind: "text", contentType: "text/plain; charset=utf-8", text: `${text}\n` };
    case "srt":
      return { kind: "text", contentType: "text/plain; charset=utf-8", text: `1\n00:00:00,000 --> ${end.replace(".", ",")}\n${text}\n\n` };
    case "vtt":
      return { kind: "text", contentType: "text/plain; charset=utf-8", text: `WEBVTT\n\n00:00:00.000 --> ${end}\n${text}\n\n` };
    case "verbose_json": {
      const granularities = form.getAll("timestamp_granularities[]").map(String);
      const body: JsonObject = { task: "transcribe", language: String(form.get("language") ?? "english"), duration, text };
      if (granularities.includes("word")) {
        const words = text.split(" ");
        body.words = words.map((word, i) => ({ word, start: (duration * i) / words.length, end: (duration * (i + 1)) / words.length }));
      }
      if (granularities.length === 0 || granularities.includes("segment")) {
        body.segments = [
          {
            id: 0,
            seek: 0,
            start: 0,
            end: duration,
            text: ` ${text}`,
            tokens: [50364, 50365],
            temperature: 0,
            avg_logprob: -0.25,
            compression_ratio: 1.1,
            no_speech_prob: 0.01,
          },
        ];
      }
      body.usage = seconds;
      return { kind: "json", body };
    }
    case "diarized_json":
      return {
        kind: "json",
        body: {
          task: "transcribe",
          duration,
          text,
          segments: [{ type: "transcript.text.segment", id: "seg_001", start: 0, end: duration, text, speaker: "A" }],
          usage: seconds,
        },
      };
    default:
      return { kind: "json", body: { text, usage: whisper ? seconds : tokens } };
  }
}

/** Seconds as `HH:MM:SS.mmm`. */
function timestamp(seconds: number): string {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}.${pad(ms % 1000, 3)}`;
}

function invalid(ex: Exchange, message: string, param: string | null): void {
  ex.json(400, { error: { message, type: "invalid_request_error", param, code: null } });
}

/** `POST /audio/speech`: the bytes in a few chunked writes, or SSE frames for `stream_format: "sse"`. */
export async function answerSpeech(ex: Exchange, body: JsonObject): Promise<void> {
  const problem = speechRequestProblem(body);
  if (problem) return invalid(ex, problem.message, problem.param);
  if (body.stream_format === "sse") return ex.sse(200, speechFrames(body));
  const bytes = speechBytes(body, ex.step?.audioBytes);
  // A long answer goes out in 64 KiB writes, as a provider streams it.
  await sendBytes(ex, speechContentType(body), byteChunks(bytes, Math.max(4, Math.ceil(bytes.length / 65_536))));
}

/** `POST /audio/transcriptions`, multipart: the emulator keeps such bodies as raw bytes. */
export async function answerTranscription(ex: Exchange): Promise<void> {
  const form = await readTranscriptionForm(ex.record.body, ex.req.headers["content-type"]);
  if (!form) return invalid(ex, "Invalid Content-Type header, expected multipart/form-data.", null);
  const answer = transcriptionAnswer(form);
  if (answer.kind === "error") return invalid(ex, answer.message, answer.param);
  if (answer.kind === "sse") return ex.sse(200, answer.frames);
  if (answer.kind === "text") return ex.json(200, answer.text, { "content-type": answer.contentType });
  ex.json(200, answer.body);
}

/** A binary answer, chunked, honouring the step's headers and chunk delay and a client leaving. */
async function sendBytes(ex: Exchange, contentType: string, chunks: readonly Buffer[]): Promise<void> {
  const delay = ex.step?.chunkDelayMs ?? 0;
  ex.record.status = 200;
  ex.res.writeHead(200, { ...ex.headers, "content-type": contentType, ...ex.step?.headers });
  for (let i = 0; i < chunks.length; i++) {
    if (ex.closed) return;
    const ok = ex.res.write(chunks[i]);
    ex.record.chunksWritten++;
    if (delay > 0 && i < chunks.length - 1) await new Promise((r) => setTimeout(r, delay));
    else if (!ok) await drained(ex);
  }
  if (!ex.closed) ex.res.end();
}

function drained(ex: Exchange): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      ex.res.off("drain", done);
      ex.res.off("close", done);
      resolve();
    };
    ex.res.on("drain", done);
    ex.res.on("close", done);
  });
}
