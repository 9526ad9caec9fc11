import { randomUUID } from "node:crypto";
import { isUnparsedBody, startEmulator } from "./http-emulator";
import type { EmulatorOptions, Exchange, ProviderSpec, UpstreamEmulator } from "./http-emulator";
import { chatCompletion, chatCompletionFrames, planChat, type ChatPlan } from "./openai-chat";
import { TINY_PNG_BASE64 } from "./openai-images";
import { isRecord, valueForSchema } from "./synthetic";
import type { JsonObject } from "./synthetic";

export interface MistralUpstreamOptions extends EmulatorOptions {
  /** Path prefix of the base URL (default "/v1", as in https://api.mistral.ai/v1). */
  basePath?: string;
  /** Pages of a `document_url` document when `pages` is not given (default 3); an image has 1. */
  documentPages?: number;
}

/**
 * Mistral's error bodies: `{object:"error", message, type, param, code}`, where a 422's `message`
 * is FastAPI's `{detail:[{type, loc, msg, input}]}` (seen in many client reports); a refused key is
 * `{message:"Unauthorized", request_id}`. Texts for other statuses are made up **[GUESS]**.
 */
function mistralError(message: unknown, type = "invalid_request_error"): JsonObject {
  return { object: "error", message, type, param: null, code: null };
}

type Issue = { type: string; loc: (string | number)[]; msg: string; input?: unknown };

const DEFAULT_MESSAGES: Record<number, string> = {
  400: "Bad request",
  404: "Not Found",
  429: "Requests rate limit exceeded",
  500: "Internal server error",
  503: "Service unavailable",
};

/** Mistral rejects unknown body fields (pydantic `extra_forbidden`). */
const OCR_FIELDS = new Set([
  "model",
  "id",
  "document",
  "pages",
  "include_image_base64",
  "image_limit",
  "image_min_size",
  "bbox_annotation_format",
  "document_annotation_format",
  "document_annotation_prompt",
  "table_format",
  "extract_header",
  "extract_footer",
  "include_blocks",
  "confidence_scores_granularity",
]);

/**
 * Mistral's chat request fields (its API reference, `ChatCompletionRequest`); anything else, such as
 * OpenAI's `stream_options` or `max_completion_tokens`, is a 422 `extra_forbidden` (reported by many
 * OpenAI-client users, e.g. avante.nvim#2347, litellm#8978).
 */
const CHAT_FIELDS = new Set([
  "model",
  "messages",
  "temperature",
  "top_p",
  "max_tokens",
  "stream",
  "stop",
  "random_seed",
  "response_format",
  "tools",
  "tool_choice",
  "presence_penalty",
  "frequency_penalty",
  "n",
  "prediction",
  "parallel_tool_calls",
  "prompt_mode",
  "safe_prompt",
]);

const DIMENSIONS = { dpi: 200, height: 2200, width: 1700 };

/**
 * A fake Mistral API on node:http: `POST /v1/ocr` with deterministic pages (one per requested page
 * index, each naming the document), 422 validation errors naming the field, Bearer auth, scripted
 * failures; and `POST /v1/chat/completions`, OpenAI-compatible, answered like the OpenAI emulator.
 */
export function startMistralUpstream(opts: MistralUpstreamOptions = {}): Promise<UpstreamEmulator> {
  const basePath = (opts.basePath ?? "/v1").replace(/\/$/, "");
  const documentPages = opts.documentPages ?? 3;

  const spec: ProviderSpec = {
    basePath,
    commonHeaders: () => ({ "mistral-correlation-id": randomUUID() }),
    precheck(ex) {
      if (opts.apiKey === undefined) return false;
      const auth = ex.req.headers.authorization;
      const key = auth?.startsWith("Bearer ") ? auth.slice(7).trim() : undefined;
      if (key !== opts.apiKey) {
        ex.json(401, { message: "Unauthorized", request_id: randomUUID().replace(/-/g, "") });
        return true;
      }
      return false;
    },
    errorBody: (status) =>
      mistralError(DEFAULT_MESSAGES[status] ?? `Request failed with status ${status}`, status >= 500 ? "internal_server_error" : "invalid_request_error"),
    handle,
  };

  function handle(ex: Exchange): void | Promise<void> {
    const { method, path } = ex.record;
    const route = path === `${basePath}/ocr` ? ocr : path === `${basePath}/chat/completions` ? chat : undefined;
    if (!route) return ex.json(404, { detail: "Not Found" });
    if (method !== "POST") return ex.json(405, { detail: "Method Not Allowed" });
    const body = ex.record.body;
    if (isUnparsedBody(body) || !isRecord(body)) return invalid(ex, [{ type: "json_invalid", loc: ["body"], msg: "JSON decode error" }]);
    return route(ex, body);
  }

  function invalid(ex: Exchange, issues: Issue[]): void {
    ex.json(422, mistralError({ detail: issues }));
  }

  function ocr(ex: Exchange, body: JsonObject): void {
    const issues = ocrIssues(body);
    if (issues.length > 0) return invalid(ex, issues);
    const document = body.document as JsonObject;
    const isImage = document.type === "image_url";
    const source = documentLabel(document);
    const count = isImage ? 1 : documentPages;
    const indexes = Array.isArray(body.pages) ? (body.pages as number[]) : Array.from({ length: count }, (_, i) => i);
    const imageLimit = typeof body.image_limit === "number" ? body.image_limit : Infinity;
    const pages = indexes.map((index, n) => {
      const markdown = `# Page ${index + 1}\n\nText recognised on page ${index + 1} of ${source}.\n\n![img-${index}.jpeg](img-${index}.jpeg)`;
      const images =
        n < imageLimit
          ? [
              {
                id: `img-${index}.jpeg`,
                top_left_x: 100,
                top_left_y: 200,
                bottom_right_x: 900,
                bottom_right_y: 800,
                image_base64: body.include_image_base64 === true ? `data:image/png;base64,${TINY_PNG_BASE64}` : null,
                ...(isRecord(body.bbox_annotation_format) ? { image_annotation: annotation(body.bbox_annotation_format, `image on page ${index + 1}`) } : {}),
              },
            ]
          : [];
      return { index, markdown, images, tables: [], hyperlinks: [], header: null, footer: null, dimensions: DIMENSIONS };
    });
    const documentAnnotation = isRecord(body.document_annotation_format) ? annotation(body.document_annotation_format, source) : null;
    ex.json(200, {
      pages,
      model: `${String(body.model)}-2505`,
      document_annotation: documentAnnotation,
      usage_info: { pages_processed: pages.length, doc_size_bytes: source.length * 1000 },
    });
  }

  function chat(ex: Exchange, body: JsonObject): Promise<void> | void {
    if (typeof body.model !== "string") return invalid(ex, [{ type: "missing", loc: ["body", "model"], msg: "Field required" }]);
    if (!Array.isArray(body.messages)) return invalid(ex, [{ type: "missing", loc: ["body", "messages"], msg: "Field required" }]);
    const extra = Object.keys(body).filter((key) => !CHAT_FIELDS.has(key));
    if (extra.length > 0) {
      return invalid(
        ex,
        extra.map((key) => ({ type: "extra_forbidden", loc: ["body", key], msg: "Extra inputs are not permitted", input: body[key] })),
      );
    }
    const plan = planChat(body);
    const id = randomUUID().replace(/-/g, "");
    const created = Math.floor(Date.now() / 1000);
    if (body.stream === true) return ex.sse(200, mistralChatFrames(plan, id, created));
    ex.json(200, chatCompletion(plan, id, created));
  }

  return startEmulator(spec, opts);
}

/**
 * Mistral streams carry no `usage: null` on every chunk and no usage-only chunk: the usage object
 * rides on the last chunk, the one with `finish_reason`.
 */
function mistralChatFrames(plan: ChatPlan, id: string, created: number): string[] {
  const withUsage = chatCompletionFrames({ ...plan, includeUsage: true, obfuscation: false }, id, created);
  const usageChunk = JSON.parse(withUsage[withUsage.length - 2]!.slice("data: ".length)) as JsonObject;
  const frames = chatCompletionFrames({ ...plan, includeUsage: false, obfuscation: false }, id, created);
  const lastIndex = frames.length - 2;
  const last = JSON.parse(frames[lastIndex]!.slice("data: ".length)) as JsonObject;
  frames[lastIndex] = `data: ${JSON.stringify({ ...last, usage: usageChunk.usage })}\n\n`;
  return frames;
}

function ocrIssues(body: JsonObject): Issue[] {
  const issues: Issue[] = [];
  for (const key of Object.keys(body)) {
    if (!OCR_FIELDS.has(key)) issues.push({ type: "extra_forbidden", loc: ["body", key], msg: "Extra inputs are not permitted", input: body[key] });
  }
  if (typeof body.model !== "string") issues.push({ type: "missing", loc: ["body", "model"], msg: "Field required" });
  const doc = body.document;
  if (!isRecord(doc)) {
    issues.push({ type: "missing", loc: ["body", "document"], msg: "Field required" });
  } else if (doc.type === "document_url") {
    if (typeof doc.document_url !== "string")
      issues.push({ type: "string_type", loc: ["body", "document", "document_url"], msg: "Input should be a valid string" });
  } else if (doc.type === "image_url") {
    const image = doc.image_url;
    if (typeof image !== "string" && !(isRecord(image) && typeof image.url === "string")) {
      issues.push({ type: "string_type", loc: ["body", "document", "image_url"], msg: "Input should be a valid string" });
    }
  } else if (doc.type === "file") {
    // Any file id is unknown here: nothing can be uploaded to the emulator.
    if (typeof doc.file_id !== "string") issues.push({ type: "missing", loc: ["body", "document", "file_id"], msg: "Field required" });
  } else {
    issues.push({
      type: "union_tag_invalid",
      loc: ["body", "document"],
      msg: "Input tag does not match any of the expected tags: 'document_url', 'image_url', 'file'",
    });
  }
  const pages = body.pages;
  if (pages !== undefined && pages !== null && !(Array.isArray(pages) && pages.every((p) => Number.isInteger(p) && (p as number) >= 0))) {
    issues.push({ type: "list_type", loc: ["body", "pages"], msg: "Input should be a valid list of non-negative integers" });
  }
  for (const key of ["image_limit", "image_min_size"]) {
    const v = body[key];
    if (v !== undefined && v !== null && !Number.isInteger(v)) issues.push({ type: "int_type", loc: ["body", key], msg: "Input should be a valid integer" });
  }
  return issues;
}

/** The document as the markdown names it: its name, else its URL (a data: URL by its media type only). */
function documentLabel(doc: JsonObject): string {
  if (typeof doc.document_name === "string" && doc.document_name !== "") return doc.document_name;
  const url = doc.type === "image_url" ? (isRecord(doc.image_url) ? doc.image_url.url : doc.image_url) : doc.document_url;
  const text = typeof url === "string" ? url : "";
  if (!text.startsWith("data:")) return text;
  const end = text.search(/[;,]/);
  return end > 0 ? text.slice(0, end) : "data:";
}

/** An annotation is a JSON string satisfying the requested `json_schema.schema`. */
function annotation(format: JsonObject, text: string): string {
  const schema = isRecord(format.json_schema) ? format.json_schema.schema : undefined;
  return JSON.stringify(valueForSchema(schema, text));
}
