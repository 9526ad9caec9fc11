import { buildComponents } from "./components";
import { errorResponseName, errorResponses } from "./errors";
import { headerComponents, headerRef, rateLimitHeaderRefs } from "./headers";
import type { JsonSchema } from "./json-schema";
import { publicOperations, type Operation } from "./operations";

export interface ApiDocumentOptions {
  /** The gateway's release, as `info.version`. */
  version?: string;
}

const successHeaders: Record<string, string> = {
  "idempotent-replayed": "IdempotentReplayed",
  "retry-after": "PollAfter",
  "preference-applied": "PreferenceApplied",
};

const tags = [
  ["Models", "The models a key may call."],
  ["Chat", "OpenAI's Chat Completions, for every chat model."],
  ["Messages", "Anthropic's Messages, for every chat model."],
  ["Responses", "OpenAI's Responses, for every chat model."],
  ["Completions", "OpenAI's legacy text completions."],
  ["Embeddings", "Vectors for texts."],
  ["Rerank", "Documents ordered by relevance to a query."],
  ["Images", "Image generation."],
  ["Audio", "Speech and transcription."],
  ["OCR", "Documents read into Markdown."],
  ["Async jobs", "Every model route as a job: create it, then poll it by id. Jobs survive restarts and run at least once."],
  [
    "Batches",
    "OpenAI's Files and Batch APIs: upload a JSONL file of requests, run it as a batch of async jobs paced by the workspace's limits and budgets, read the output and error files.",
  ],
  ["Web tools", "Tavily's web search, extract, crawl, map and research (`webtool`)."],
  ["Search", "SerpAPI's search engine results (`serptool`)."],
] as const;

const description = `One API in front of many model and web-tool providers, with one key per application.
The routes speak the providers' own formats (OpenAI's, Anthropic's, Cohere's, Mistral's, Tavily's,
SerpAPI's), so their official clients work when only the base URL and the key change.

Send the key as \`Authorization: Bearer <key>\` (or \`x-api-key: <key>\`). Every answer carries
\`x-request-id\`. Calls that count against the rate limits carry \`x-ratelimit-*\`; a 429 says in
\`retry-after\` when to try again. Only 429, 502, 503 and 504 are worth retrying. Errors come in
OpenAI's envelope, except on the Messages routes, which use Anthropic's.`;

/**
 * The OpenAPI 3.1 document of the public API. Schemas come from the zod contracts
 * (@gw/contracts), error responses from the one table of error codes (@gw/errors), and the
 * operations from this package's own table, which a test in ingress holds to ingress's route table.
 */
export function buildApiDocument(options: ApiDocumentOptions = {}): JsonSchema {
  const { schemas } = buildComponents();
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of publicOperations()) {
    paths[operation.path] ??= {};
    paths[operation.path]![operation.method] = writeOperation(operation);
  }
  return {
    openapi: "3.1.0",
    info: { title: "AI Gateway API", version: options.version ?? "unknown", description },
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    servers: [{ url: "/", description: "This gateway" }],
    security: [{ BearerAuth: [] }, { ApiKeyAuth: [] }],
    tags: tags.map(([name, text]) => ({ name, description: text })),
    paths,
    components: {
      schemas,
      responses: errorResponses(),
      headers: headerComponents,
      securitySchemes: {
        BearerAuth: { type: "http", scheme: "bearer", description: "The gateway key: `Authorization: Bearer <key>`." },
        ApiKeyAuth: { type: "apiKey", in: "header", name: "x-api-key", description: "The same key, as Anthropic's clients send it." },
      },
    },
  };
}

function writeOperation(op: Operation): JsonSchema {
  const headers: JsonSchema = { "x-request-id": headerRef("RequestId"), ...(op.charged ? rateLimitHeaderRefs() : {}) };
  for (const name of op.success.headers ?? []) headers[name] = headerRef(successHeaders[name]!);
  const responses: JsonSchema = {
    [op.success.status]: { description: op.success.description, headers, content: op.success.content },
  };
  if (op.pending) responses[202] = { description: op.pending, headers: { ...headers, "retry-after": headerRef("PollAfter") }, content: op.success.content };
  for (const status of op.errors) responses[status] = { $ref: `#/components/responses/${errorResponseName(op.envelope, status)}` };
  const written: JsonSchema = { operationId: op.operationId, tags: [op.tag], summary: op.summary, description: op.description };
  if (op.parameters) written.parameters = op.parameters;
  if (op.body) {
    const mediaType = op.body.kind === "json" ? "application/json" : "multipart/form-data";
    written.requestBody = {
      required: true,
      content: { [mediaType]: { schema: { $ref: `#/components/schemas/${op.body.schema}` }, example: op.body.example } },
    };
  }
  written.responses = responses;
  return written;
}
