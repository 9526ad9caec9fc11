import type { Exchange } from "./http-emulator";
import { countTokens, randomId } from "./synthetic";
import type { JsonObject } from "./synthetic";

/**
 * `POST /images/generations` (provider-wire-formats.md §3.9, schema `ImagesResponse`, stream events
 * `ImageGenPartialImageEvent` / `ImageGenCompletedEvent`). DALL·E models answer `url` by default (or
 * `b64_json` when asked) and report no usage; every other model behaves like a GPT image model:
 * always `b64_json`, with `size`, `quality`, `background`, `output_format` and token usage. Every
 * image is the same 1×1 PNG.
 */

/** A valid 1×1 transparent PNG. */
export const TINY_PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/** Output tokens per image: what gpt-image-1 charges for a low-quality 1024×1024 image. */
const IMAGE_OUTPUT_TOKENS = 272;

/** The 400 message for a request this emulator refuses, or undefined when it is acceptable. */
export function imageRequestProblem(body: JsonObject): { message: string; param: string } | undefined {
  if (typeof body.prompt !== "string" || body.prompt === "") return { message: "Missing required parameter: 'prompt'.", param: "prompt" };
  const n = body.n ?? 1;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 10) return { message: "Invalid 'n': must be an integer from 1 to 10.", param: "n" };
  if (body.model === "dall-e-3" && n !== 1) return { message: "You must provide n=1 for this model.", param: "n" };
  return undefined;
}

function isDallE(model: unknown): boolean {
  return typeof model === "string" && model.startsWith("dall-e");
}

function count(body: JsonObject): number {
  return typeof body.n === "number" ? body.n : 1;
}

/** The GPT image models' descriptive fields, with "auto" resolved as the API reports it. */
function gptImageFields(body: JsonObject) {
  const size = typeof body.size === "string" && ["1024x1024", "1024x1536", "1536x1024"].includes(body.size) ? body.size : "1024x1024";
  const quality = typeof body.quality === "string" && ["low", "medium", "high"].includes(body.quality) ? body.quality : "medium";
  const background = body.background === "transparent" ? "transparent" : "opaque";
  const outputFormat = typeof body.output_format === "string" && ["png", "jpeg", "webp"].includes(body.output_format) ? body.output_format : "png";
  return { size, quality, background, output_format: outputFormat };
}

function usage(body: JsonObject): JsonObject {
  const input = Math.max(1, countTokens(String(body.prompt ?? "")));
  const output = IMAGE_OUTPUT_TOKENS * count(body);
  return {
    input_tokens: input,
    output_tokens: output,
    total_tokens: input + output,
    input_tokens_details: { text_tokens: input, image_tokens: 0 },
  };
}

export function imagesResponse(body: JsonObject): JsonObject {
  const created = Math.floor(Date.now() / 1000);
  const n = count(body);
  if (isDallE(body.model)) {
    const b64 = body.response_format === "b64_json";
    const data = Array.from({ length: n }, () => {
      const image: JsonObject = b64 ? { b64_json: TINY_PNG_BASE64 } : { url: `https://images.emulator.invalid/${randomId(24)}.png` };
      if (body.model === "dall-e-3") image.revised_prompt = `A picture of ${String(body.prompt)}`;
      return image;
    });
    return { created, data };
  }
  return {
    created,
    data: Array.from({ length: n }, () => ({ b64_json: TINY_PNG_BASE64 })),
    ...gptImageFields(body),
    usage: usage(body),
  };
}

/**
 * `stream: true` (GPT image models): per image, `partial_images` partial events and then a completed
 * event, each as `event: <type>` plus data, with no `[DONE]` (the spec's streaming example).
 */
export function imageFrames(body: JsonObject): string[] {
  const createdAt = Math.floor(Date.now() / 1000);
  const fields = gptImageFields(body);
  const partials = typeof body.partial_images === "number" ? Math.min(3, Math.max(0, Math.floor(body.partial_images))) : 0;
  const frames: string[] = [];
  const push = (data: JsonObject) => frames.push(`event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`);
  for (let image = 0; image < count(body); image++) {
    for (let i = 0; i < partials; i++) {
      push({ type: "image_generation.partial_image", b64_json: TINY_PNG_BASE64, created_at: createdAt, ...fields, partial_image_index: i });
    }
    // [GUESS] with n > 1, each completed event carries the whole call's usage (the spec shows n = 1).
    push({ type: "image_generation.completed", b64_json: TINY_PNG_BASE64, created_at: createdAt, ...fields, usage: usage(body) });
  }
  return frames;
}

/** `POST /images/generations`: JSON, or SSE events for `stream: true`. */
export function answerImages(ex: Exchange, body: JsonObject): Promise<void> | void {
  const problem = imageRequestProblem(body);
  if (problem) return ex.json(400, { error: { message: problem.message, type: "invalid_request_error", param: problem.param, code: null } });
  if (body.stream === true && !isDallE(body.model)) return ex.sse(200, imageFrames(body));
  ex.json(200, imagesResponse(body));
}
