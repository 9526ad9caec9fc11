import { z } from "zod";
import { ModelName } from "./model-name";

/**
 * OpenAI audio routes: speech (`POST /v1/audio/speech`, JSON in, audio bytes out) and
 * transcriptions (`POST /v1/audio/transcriptions`, multipart/form-data in). The fields the gateway
 * interprets are checked; the rest passes through to the upstream unchanged.
 */

export const speechFormats = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;

export const SpeechRequest = z.looseObject({
  model: ModelName,
  input: z.string().min(1).max(4096),
  voice: z.union([z.string().min(1), z.looseObject({ id: z.string().min(1) })]),
  instructions: z.string().nullish(),
  response_format: z.enum(speechFormats).nullish(),
  speed: z.number().min(0.25).max(4).nullish(),
  stream_format: z.enum(["audio", "sse"]).nullish(),
});
export type SpeechRequest = z.infer<typeof SpeechRequest>;

export const transcriptionFormats = ["json", "text", "srt", "verbose_json", "vtt", "diarized_json"] as const;
export type TranscriptionFormat = (typeof transcriptionFormats)[number];

/** A multipart text field holding a number (forms carry only strings). */
const numericField = (min: number, max: number) =>
  z.string().refine((v) => v.trim() !== "" && Number.isFinite(Number(v)) && Number(v) >= min && Number(v) <= max, {
    message: `must be a number from ${min} to ${max}`,
  });

/**
 * The fields of a transcription form, one value per name (the last one when repeated). `file` is
 * the upload itself; every other field is text. Array fields (`timestamp_granularities[]`,
 * `include[]`) and nested ones (`chunking_strategy[type]`) are not interpreted: they pass through.
 */
export const TranscriptionForm = z.looseObject({
  file: z.instanceof(Blob, { message: "expected an audio file upload" }),
  model: ModelName,
  response_format: z.enum(transcriptionFormats).optional(),
  language: z.string().optional(),
  prompt: z.string().optional(),
  temperature: numericField(0, 1).optional(),
  stream: z.enum(["true", "false"]).optional(),
});
export type TranscriptionForm = z.infer<typeof TranscriptionForm>;

/** Either tokens (gpt-4o-*-transcribe) or seconds of audio (whisper-1). */
export const TranscriptionUsage = z.looseObject({
  type: z.string(),
  total_tokens: z.number().int().optional(),
  seconds: z.number().optional(),
});
export type TranscriptionUsage = z.infer<typeof TranscriptionUsage>;

/** The JSON answers (`json`, `verbose_json`, `diarized_json`) all carry `text` and maybe `usage`. */
export const TranscriptionJson = z.looseObject({
  text: z.string(),
  usage: TranscriptionUsage.nullish(),
});
export type TranscriptionJson = z.infer<typeof TranscriptionJson>;
