/**
 * The token reservation taken before a model call: the prompt's size plus the most the answer may
 * use. It is settled against the real usage afterwards, so it only has to be a fair upper estimate;
 * a request whose estimate alone exceeds the token limit is refused before it costs anything.
 */

/** Rough tokens per character of English text and code, the ratio providers quote. */
const CHARS_PER_TOKEN = 4;
/** An inline attachment (a base64 image or file) counts as about this many tokens. */
const ATTACHMENT_TOKENS = 1_600;
const ATTACHMENT_MIN_CHARS = 1_000;
const attachmentKeys = new Set(["data", "url", "image_url", "document_url", "file_data", "b64_json", "image"]);

/** Output budget when the request sets no maximum; `max_tokens` is required on /v1/messages. */
const defaultOutputTokens: Record<string, number> = {
  "/v1/chat/completions": 1_024,
  "/v1/responses": 1_024,
  "/v1/messages": 1_024,
  "/v1/completions": 16, // OpenAI's default max_tokens for legacy completions
};
const generative = new Set(Object.keys(defaultOutputTokens));

export function estimateTokens(route: string, body: unknown): number {
  const { input, output } = estimateTokenParts(route, body);
  return input + output;
}

/** The reservation's two parts: the input's estimate and the most the answer may use (budgets price them apart). */
export function estimateTokenParts(route: string, body: unknown): { input: number; output: number } {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { input: 0, output: 0 };
  const fields = body as Record<string, unknown>;
  let input = 0;
  for (const [name, value] of Object.entries(fields)) {
    if (name !== "model") input += textTokens(value, name);
  }
  if (!generative.has(route)) return { input, output: 0 };
  const max = [fields.max_completion_tokens, fields.max_output_tokens, fields.max_tokens].find(
    (v): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0,
  );
  const choices = typeof fields.n === "number" && fields.n >= 1 ? Math.floor(fields.n) : 1;
  return { input, output: choices * Math.ceil(max ?? defaultOutputTokens[route] ?? 0) };
}

function textTokens(value: unknown, key: string): number {
  if (typeof value === "string") {
    if (attachmentKeys.has(key) && value.length >= ATTACHMENT_MIN_CHARS) return ATTACHMENT_TOKENS;
    return Math.ceil(value.length / CHARS_PER_TOKEN);
  }
  if (Array.isArray(value)) return value.reduce<number>((n, v) => n + textTokens(v, key), 0);
  if (typeof value === "object" && value !== null) {
    let n = 0;
    for (const [k, v] of Object.entries(value)) n += textTokens(v, k);
    return n;
  }
  return 0;
}

/**
 * An upload (a transcription's audio) reserves a token per KiB of form: compressed speech runs at
 * 16 to 32 KiB a second and a transcription model reads about 17 audio tokens a second, so a file's
 * size is a fair stand-in for what it will cost. A model that reports its usage settles the
 * reservation to the real count; one that reports seconds (whisper) keeps this estimate.
 */
export function estimateUploadTokens(bytes: number): number {
  return Math.ceil(bytes / 1024);
}
