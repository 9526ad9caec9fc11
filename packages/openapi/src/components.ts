import { z } from "zod";
import * as c from "@gw/contracts";
import { isObject, ref, tidy, type JsonSchema } from "./json-schema";

/** A component: the contract schema it is generated from, and what a reader needs to know about it. */
type Entry = [schema: z.ZodType, description: string];

const passThrough = "Fields not listed here pass through to the upstream unchanged.";

/**
 * The upload form of `POST /v1/files`, one value per field, with `expires_after` as the bracketed
 * fields OpenAI's clients send it as (`expires_after[anchor]`, `expires_after[seconds]`).
 */
const FileUploadForm = z.object({
  file: z.instanceof(Blob),
  purpose: z.enum(c.uploadPurposes),
  "expires_after[anchor]": c.ExpiresAfter.shape.anchor.optional(),
  "expires_after[seconds]": c.ExpiresAfter.shape.seconds.optional(),
});

/**
 * Request bodies, generated as zod reads its input (a field with a default is optional). The names
 * are the contracts' own; each description says what the schema cannot: the cross-field rules a
 * refinement checks, and where the contract is loose on purpose.
 */
const requests: Record<string, Entry> = {
  ChatCompletionRequest: [c.ChatCompletionRequest, `OpenAI's Chat Completions request. ${passThrough}`],
  ChatMessage: [
    c.ChatMessage,
    "A message: `content` is required except on an assistant message that carries `tool_calls`; a `tool` message needs `tool_call_id`. Content parts (`text`, `image_url`, `input_audio`, `file`, …) are passed on as sent.",
  ],
  ChatTool: [c.ChatTool, "A function the model may call; `parameters` is a JSON Schema object."],
  MessagesRequest: [c.MessagesRequest, `Anthropic's Messages request. ${passThrough}`],
  MessagesMessage: [c.MessagesMessage, "A message; content blocks are passed on as sent."],
  MessagesContentBlock: [
    c.MessagesContentBlock,
    "A content block (`text`, `image`, `document`, `tool_use`, `tool_result`, `thinking`, …), in Anthropic's shape for its `type`; the gateway checks only that `type` is set.",
  ],
  MessagesTool: [c.MessagesTool, "A client tool (`input_schema`) or an Anthropic server tool (`type`)."],
  ResponsesRequest: [
    c.ResponsesRequest,
    "OpenAI's Responses request (`CreateResponse`), served statelessly: `input` is required and `previous_response_id`, stored responses and hosted tools are refused with a 400 that names the field.",
  ],
  ResponsesInputItem: [
    c.ResponsesInputItem,
    "An input item: a message (`type` may be left out), a `function_call` the model made earlier, or its `function_call_output`. Other item types are refused by name.",
  ],
  ResponsesInputMessage: [
    c.ResponsesInputMessage,
    "A message; its content parts (`input_text`, `input_image`, `input_file`, replayed `output_text`) are passed on as sent.",
  ],
  ResponsesFunctionCall: [c.ResponsesFunctionCall, "A function call the model made, sent back with its result."],
  ResponsesFunctionCallOutput: [c.ResponsesFunctionCallOutput, "The result of a function call."],
  ResponsesTool: [c.ResponsesTool, "A tool: only `function` tools are served; hosted tools (`web_search`, `file_search`, `mcp`, …) are refused by type."],
  ResponsesFunctionTool: [c.ResponsesFunctionTool, "A function the model may call; `parameters` is a JSON Schema object."],
  CompletionRequest: [c.CompletionRequest, `OpenAI's legacy text completions request. ${passThrough}`],
  EmbeddingsRequest: [c.EmbeddingsRequest, `OpenAI's Embeddings request: text, texts, or token arrays. ${passThrough}`],
  RerankRequest: [c.RerankRequest, "Cohere's v2 rerank request, served for every rerank provider. A document is a string or `{text}`."],
  ImageGenerationRequest: [c.ImageGenerationRequest, `OpenAI's image generation request; \`model\` is required (the gateway routes on it). ${passThrough}`],
  SpeechRequest: [c.SpeechRequest, `OpenAI's text-to-speech request. ${passThrough}`],
  TranscriptionForm: [
    c.TranscriptionForm,
    "OpenAI's transcription form (multipart/form-data), one value per field. Array and nested fields (`timestamp_granularities[]`, `include[]`, `chunking_strategy[type]`) pass through unread.",
  ],
  OcrRequest: [
    c.OcrRequest,
    `Mistral's OCR request. Documents go by URL (a \`data:\` URL carries the content inline); \`file\` documents are refused, since files cannot be uploaded through the gateway. ${passThrough}`,
  ],
  WebtoolSearchRequest: [
    c.WebtoolSearchRequest,
    `Tavily's search request. ${passThrough} A credential field (\`api_key\` and the like) is refused: the gateway adds its own.`,
  ],
  WebtoolExtractRequest: [c.WebtoolExtractRequest, `Tavily's extract request: one URL or a list of them. ${passThrough}`],
  WebtoolCrawlRequest: [c.WebtoolCrawlRequest, `Tavily's crawl request. ${passThrough}`],
  WebtoolMapRequest: [c.WebtoolMapRequest, `Tavily's map request. ${passThrough}`],
  WebtoolResearchRequest: [c.WebtoolResearchRequest, "Tavily's research request. Research runs as a job polled by id, so `stream: true` is refused."],
  FileUploadForm: [
    FileUploadForm,
    "OpenAI's file upload form (multipart/form-data): a JSONL file of batch requests. Without `expires_after`, the file expires 30 days after its upload.",
  ],
  CreateBatchRequest: [
    c.CreateBatchRequest,
    "OpenAI's batch request: the uploaded file whose lines to run, and the route each line calls. `metadata` holds at most 16 pairs; `output_expires_after` sets when the output and error files expire (30 days by default).",
  ],
};

/** Answers, generated as zod writes its output (a field with a default is always there). */
const answers: Record<string, Entry> = {
  ModelList: [c.ModelList, "The models this key may call."],
  ModelEntry: [c.ModelEntry, "A model, under its public name."],
  ChatCompletion: [c.ChatCompletion, "OpenAI's chat completion, naming the public model that was asked for."],
  ChatCompletionChunk: [c.ChatCompletionChunk, "One event of a streamed chat completion (`data:` line); the stream ends with `data: [DONE]`."],
  Usage: [c.Usage, "Token counts, as the provider reported them."],
  MessagesResponse: [c.MessagesResponse, "Anthropic's message answer; content blocks are as the model produced them."],
  MessagesStreamEvent: [
    c.MessagesStreamEvent,
    "One event of a Messages stream: `event: <type>` and a JSON body with the same `type` (`message_start`, `content_block_delta`, `message_stop`, …).",
  ],
  ResponsesResponse: [c.ResponsesResponse, "OpenAI's `Response` object."],
  ResponsesStreamEvent: [
    c.ResponsesStreamEvent,
    "One event of a streamed response; `type` is also the SSE `event:` name (`response.created`, `response.output_text.delta`, `response.completed`, …).",
  ],
  Completion: [c.Completion, "A text completion; stream events have the same shape with partial `text`."],
  EmbeddingsResponse: [c.EmbeddingsResponse, "Vectors, as floats or as base64 of little-endian float32 (`encoding_format`)."],
  RerankResponse: [c.RerankResponse, "Results by descending `relevance_score`, at most `top_n` of them."],
  ImagesResponse: [c.ImagesResponse, "Generated images, as base64 or URLs."],
  TranscriptionJson: [c.TranscriptionJson, "The `json`, `verbose_json` and `diarized_json` answers; the verbose ones add segments and words."],
  OcrResponse: [c.OcrResponse, "Mistral's OCR answer under the public model name."],
  WebtoolSearchResponse: [c.WebtoolSearchResponse, "Tavily's search answer; results keep Tavily's shape."],
  WebtoolExtractResponse: [c.WebtoolExtractResponse, "Tavily's extract answer."],
  WebtoolCrawlResponse: [c.WebtoolCrawlResponse, "Tavily's crawl answer."],
  WebtoolMapResponse: [c.WebtoolMapResponse, "Tavily's map answer: URLs only."],
  WebtoolResearchQueued: [c.WebtoolResearchQueued, "The research task, queued. `id` and `request_id` both hold the gateway's job id."],
  WebtoolResearchStatus: [
    c.WebtoolResearchStatus,
    "A research task: running (`pending`, `in_progress`), `completed` with `content` (an object when `output_schema` was sent) and `sources`, or `failed` with `error`.",
  ],
  SerptoolSearchResponse: [c.SerptoolSearchResponse, "SerpAPI's answer for the engine asked for, as the provider sent it (less its account fields)."],
  AsyncJobCreated: [c.AsyncJobCreated, "The job, accepted. Poll it at the URL of its route plus `/{id}`."],
  AsyncJob: [
    c.AsyncJob,
    "A job. Once `completed`, `result` is exactly what the regular route answers; once `failed`, `error` is that route's error envelope. Statuses other than the gateway's own may come from the provider.",
  ],
  BinaryJobResult: [c.BinaryJobResult, "A binary answer (speech) as a job result: its bytes in base64 and their content type."],
  FileObject: [c.FileObject, "OpenAI's file object: an upload (`batch`) or a batch's output or error file (`batch_output`)."],
  FileList: [c.FileList, "A page of the workspace's files; `after` set to `last_id` gives the next one while `has_more`."],
  FileDeleted: [c.FileDeleted, "The file, deleted."],
  Batch: [
    c.Batch,
    "OpenAI's batch object. Once the batch has finished, `output_file_id` holds the answers and `error_file_id` the failed lines; `request_counts` and `usage` add up its lines.",
  ],
  BatchList: [c.BatchList, "A page of the workspace's batches; `after` set to `last_id` gives the next one while `has_more`."],
  OpenAIError: [c.OpenAIErrorEnvelope, "OpenAI's error envelope: every route but the Messages ones."],
  AnthropicError: [c.AnthropicErrorEnvelope, "Anthropic's error envelope: `/v1/messages` and `/v1/async/messages`."],
};

/**
 * Where a refinement chooses the schema (the input items, the tools), the component says what the
 * refinement accepts rather than the bare `{type}` zod can see.
 */
const replaced: Record<string, JsonSchema> = {
  ResponsesInputItem: { anyOf: [ref("ResponsesInputMessage"), ref("ResponsesFunctionCall"), ref("ResponsesFunctionCallOutput")] },
  ResponsesTool: ref("ResponsesFunctionTool"),
};

/** Generated fields whose meaning the schema alone does not show (a form field is always a string). */
const fieldNotes: Record<string, Record<string, JsonSchema>> = {
  TranscriptionForm: {
    file: {
      type: "string",
      format: "binary",
      contentMediaType: "application/octet-stream",
      description: "The audio file (flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav or webm).",
    },
    temperature: { description: "A number from 0 to 1." },
    stream: { description: '"true" streams the text as Server-Sent Events.' },
  },
  WebtoolResearchQueued: { id: { type: "string", description: "The job id, as in `request_id`." } },
  FileUploadForm: {
    file: {
      type: "string",
      format: "binary",
      contentMediaType: "application/octet-stream",
      description: 'The JSONL file (named `*.jsonl`): one request a line, `{custom_id, method: "POST", url, body}`.',
    },
    "expires_after[anchor]": { description: "What the expiry counts from: only `created_at`." },
    "expires_after[seconds]": { description: "Seconds from the anchor until the file expires: an hour to 30 days." },
  },
};

export interface Components {
  schemas: Record<string, JsonSchema>;
  /** Which contract schema each request component came from (tests parse the examples with it). */
  requestSchemas: Record<string, z.ZodType>;
}

/** Every schema component of the document, from the contracts, in a few milliseconds. */
export function buildComponents(): Components {
  const schemas = { ...generate(requests, "input"), ...generate(answers, "output") };
  for (const [name, schema] of Object.entries(replaced)) schemas[name] = { ...schema, description: schemas[name]!.description };
  for (const [name, notes] of Object.entries(fieldNotes)) {
    const properties = schemas[name]!.properties as Record<string, JsonSchema>;
    for (const [field, note] of Object.entries(notes)) properties[field] = { ...properties[field], ...note };
  }
  return { schemas, requestSchemas: Object.fromEntries(Object.entries(requests).map(([name, [schema]]) => [name, schema])) };
}

function generate(entries: Record<string, Entry>, io: "input" | "output"): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string; description: string }>();
  for (const [id, [schema, description]] of Object.entries(entries)) registry.add(schema, { id, description });
  const { schemas } = z.toJSONSchema(registry, {
    io,
    target: "draft-2020-12",
    uri: (id) => `#/components/schemas/${id}`,
    metadata: registry,
    // Only the upload (`z.instanceof(Blob)`) has no JSON form; fieldNotes says what it is.
    unrepresentable: "any",
  });
  return Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, tidy(schema, io === "output") as JsonSchema]));
}

/** The query parameters of a GET route, from the contract of its query. */
export function queryParameters(schema: z.ZodType, notes: Record<string, string>): JsonSchema[] {
  const generated = tidy(z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }), false);
  const properties = isObject(generated) && isObject(generated.properties) ? generated.properties : {};
  return Object.entries(properties).map(([name, property]) => ({ name, in: "query", required: false, description: notes[name], schema: property }));
}
