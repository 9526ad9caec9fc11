import { SerptoolSearchQuery, filePurposes } from "@gw/contracts";
import { queryParameters } from "./components";
import type { Envelope } from "./errors";
import { ref, type JsonSchema } from "./json-schema";
import { json, modelRoutes, type Content } from "./model-routes";

/** One operation of the public API, before it is written as OpenAPI. */
export interface Operation {
  method: "get" | "post" | "delete";
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description: string;
  envelope: Envelope;
  /** Counted against the rate limits: its answers carry the x-ratelimit-* headers. */
  charged: boolean;
  body?: { kind: "json" | "multipart"; schema: string; example: Record<string, unknown> };
  parameters?: JsonSchema[];
  success: { status: 200 | 202; description: string; content: Content; headers?: string[] };
  /** While the work runs, a 202 with the same content (research polls, as Tavily answers them). */
  pending?: string;
  /** The error statuses it can answer. */
  errors: number[];
}

/** Every authenticated call: no or a bad key (401), a disabled key (403), too many failed keys (429). */
const AUTH = [401, 403, 429, 500];
/** A body: invalid (400), too large (413), of the wrong type (415), or more than the gateway holds (503). */
const BODY = [400, 413, 415, 503];
/** A call to a provider: its refusal of the workspace's credential (424), its limits, failures and timeouts. */
const UPSTREAM = [424, 429, 502, 503, 504];
const statuses = (...lists: number[][]) => [...new Set(lists.flat())].sort((a, b) => a - b);

const jobId: JsonSchema = {
  name: "job_id",
  in: "path",
  required: true,
  description: "The job's id, as its creation answered.",
  schema: { type: "string", pattern: "^job_[A-Za-z0-9]{1,64}$" },
  example: "job_0123456789abcdef0123456789abcdef",
};

const idempotencyKey: JsonSchema = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Makes the creation safe to retry: for a day, the same key with the same body answers the same job (with `idempotent-replayed: true`), and with another body a 409.",
  schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,255}$" },
};

const preferWait: JsonSchema = {
  name: "Prefer",
  in: "header",
  required: false,
  description:
    "`wait=N` (RFC 7240): hold the answer until the job finishes, at most N seconds (up to 8). One waiting poll sees the finish as soon as it is stored, in place of many quick polls.",
  schema: { type: "string" },
  example: "wait=20",
};

const operationId = (path: string, prefix: string) =>
  prefix + path.replace(/^\/v1/, "").replace(/[/{}]+(.)?/g, (_m, ch: string | undefined) => (ch ?? "").toUpperCase());

function modelOperations(): Operation[] {
  return modelRoutes.flatMap((route): Operation[] => {
    const envelope: Envelope = route.anthropic ? "anthropic" : "openai";
    const body = { kind: route.multipart ? ("multipart" as const) : ("json" as const), schema: route.request, example: route.example };
    const path = `/v1/${route.route}`;
    const asyncPath = `/v1/async/${route.route}`;
    return [
      {
        method: "post",
        path,
        operationId: operationId(path, "create"),
        tag: route.tag,
        summary: route.summary,
        description: route.description,
        envelope,
        charged: true,
        body,
        success: { status: 200, description: "The answer.", content: route.answer },
        errors: statuses(AUTH, BODY, [404], UPSTREAM),
      },
      {
        method: "post",
        path: asyncPath,
        operationId: operationId(asyncPath, "create"),
        tag: "Async jobs",
        summary: `${route.summary}, as a job`,
        description: `Accepts the body of \`POST ${path}\` (without streaming) as a job and answers at once; poll \`GET ${asyncPath}/{job_id}\` for the result. The body is checked, and the call charged, as the regular route's.`,
        envelope,
        charged: true,
        body,
        parameters: [idempotencyKey],
        success: { status: 202, description: "The job, accepted.", content: json("AsyncJobCreated"), headers: ["idempotent-replayed"] },
        errors: statuses(AUTH, BODY, [404, 409, 424]),
      },
      {
        method: "get",
        path: `${asyncPath}/{job_id}`,
        operationId: operationId(asyncPath, "get"),
        tag: "Async jobs",
        summary: `Get a job of ${path}`,
        description: `The job's status and, once it has finished, the answer \`POST ${path}\` would have given (or its error). Only the workspace that created the job can read it.`,
        envelope,
        charged: false,
        parameters: [jobId, preferWait],
        success: {
          status: 200,
          description: "The job. While it runs, `retry-after` says when to poll again.",
          content: {
            "application/json": {
              schema: {
                allOf: [
                  ref("AsyncJob"),
                  { type: "object", properties: { result: route.result, error: ref(route.anthropic ? "AnthropicError" : "OpenAIError") } },
                ],
              },
            },
          },
          headers: ["retry-after", "preference-applied"],
        },
        errors: statuses(AUTH, [404]),
      },
    ];
  });
}

const fileId: JsonSchema = {
  name: "file_id",
  in: "path",
  required: true,
  description: "The file's id, as its upload or its batch answered.",
  schema: { type: "string", pattern: "^file-[A-Za-z0-9]{1,64}$" },
  example: "file-abc123",
};

const batchId: JsonSchema = {
  name: "batch_id",
  in: "path",
  required: true,
  description: "The batch's id, as its creation answered.",
  schema: { type: "string", pattern: "^batch_[A-Za-z0-9]{1,64}$" },
  example: "batch_abc123",
};

const after = (what: string): JsonSchema => ({
  name: "after",
  in: "query",
  required: false,
  description: `A ${what} id: the page starts after it (the previous page's \`last_id\`).`,
  schema: { type: "string" },
});

const limit = (max: number, fallback: number): JsonSchema => ({
  name: "limit",
  in: "query",
  required: false,
  description: `How many to list, 1 to ${max}.`,
  schema: { type: "integer", minimum: 1, maximum: max, default: fallback },
});

/** OpenAI's Files and Batch APIs, served by the jobs service. */
function batchOperations(): Operation[] {
  const base = { tag: "Batches", envelope: "openai" as const };
  return [
    {
      ...base,
      method: "post",
      path: "/v1/files",
      operationId: "createFile",
      summary: "Upload a file",
      description:
        "Uploads a JSONL file of batch requests (purpose `batch`), up to 200 MB, for `POST /v1/batches`. Counts as one request against the rate limits; the lines cost nothing until a batch runs them.",
      charged: true,
      body: { kind: "multipart", schema: "FileUploadForm", example: { purpose: "batch" } },
      success: { status: 200, description: "The file.", content: json("FileObject") },
      errors: statuses(AUTH, BODY),
    },
    {
      ...base,
      method: "get",
      path: "/v1/files",
      operationId: "listFiles",
      summary: "List files",
      description: "The workspace's files that have not expired: its uploads and its batches' output and error files.",
      charged: false,
      parameters: [
        { name: "purpose", in: "query", required: false, description: "Only files of this purpose.", schema: { type: "string", enum: [...filePurposes] } },
        limit(10_000, 10_000),
        {
          name: "order",
          in: "query",
          required: false,
          description: "By creation time: `asc` oldest first, `desc` newest first.",
          schema: { type: "string", enum: ["asc", "desc"], default: "desc" },
        },
        after("file"),
      ],
      success: { status: 200, description: "A page of files.", content: json("FileList") },
      errors: statuses(AUTH, [400]),
    },
    {
      ...base,
      method: "get",
      path: "/v1/files/{file_id}",
      operationId: "retrieveFile",
      summary: "Get a file",
      description: "A file of the workspace, without its content.",
      charged: false,
      parameters: [fileId],
      success: { status: 200, description: "The file.", content: json("FileObject") },
      errors: statuses(AUTH, [404]),
    },
    {
      ...base,
      method: "delete",
      path: "/v1/files/{file_id}",
      operationId: "deleteFile",
      summary: "Delete a file",
      description: "Deletes a file of the workspace and its content.",
      charged: false,
      parameters: [fileId],
      success: { status: 200, description: "The file, deleted.", content: json("FileDeleted") },
      errors: statuses(AUTH, [404]),
    },
    {
      ...base,
      method: "get",
      path: "/v1/files/{file_id}/content",
      operationId: "downloadFile",
      summary: "Get a file's content",
      description:
        "The file's bytes as uploaded, or a batch's output or error file: JSONL, one line per request, `{id, custom_id, response: {status_code, request_id, body}, error}`.",
      charged: false,
      parameters: [fileId],
      success: {
        status: 200,
        description: "The file's bytes.",
        content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
      },
      errors: statuses(AUTH, [404]),
    },
    {
      ...base,
      method: "post",
      path: "/v1/batches",
      operationId: "createBatch",
      summary: "Create a batch",
      description:
        "Runs each line of an uploaded file as a job on `endpoint`, paced by the workspace's rate limits and budgets, within 24 hours. Counts as one request; each line is charged as the call it makes, when it runs. An unknown `input_file_id` is a 404.",
      charged: true,
      body: {
        kind: "json",
        schema: "CreateBatchRequest",
        example: { input_file_id: "file-abc123", endpoint: "/v1/chat/completions", completion_window: "24h" },
      },
      success: { status: 200, description: "The batch, `validating` its input.", content: json("Batch") },
      errors: statuses(AUTH, BODY, [404]),
    },
    {
      ...base,
      method: "get",
      path: "/v1/batches",
      operationId: "listBatches",
      summary: "List batches",
      description: "The workspace's batches, newest first.",
      charged: false,
      parameters: [after("batch"), limit(100, 20)],
      success: { status: 200, description: "A page of batches.", content: json("BatchList") },
      errors: statuses(AUTH, [400]),
    },
    {
      ...base,
      method: "get",
      path: "/v1/batches/{batch_id}",
      operationId: "retrieveBatch",
      summary: "Get a batch",
      description: "A batch of the workspace: its status, its line counts and, once finished, its output and error files.",
      charged: false,
      parameters: [batchId],
      success: { status: 200, description: "The batch.", content: json("Batch") },
      errors: statuses(AUTH, [404]),
    },
    {
      ...base,
      method: "post",
      path: "/v1/batches/{batch_id}/cancel",
      operationId: "cancelBatch",
      summary: "Cancel a batch",
      description:
        "Stops a batch: no more lines start, and it is `cancelling` until the running ones end, then `cancelled` with the answers so far in its output file. A batch that has already finished is a 409.",
      charged: false,
      parameters: [batchId],
      success: { status: 200, description: "The batch, `cancelling` or `cancelled`.", content: json("Batch") },
      errors: statuses(AUTH, [404, 409]),
    },
  ];
}

const webtoolCalls = [
  ["search", "Search the web", "Tavily's search: results, and an answer when asked for."],
  ["extract", "Extract pages", "Tavily's extract: the content of one or more URLs."],
  ["crawl", "Crawl a site", "Tavily's crawl: pages of a site from a root URL, with their content."],
  ["map", "Map a site", "Tavily's map: the URLs of a site from a root URL."],
] as const;

function toolOperations(): Operation[] {
  const webtool = webtoolCalls.map(([name, summary, description]): Operation => {
    const path = `/v1/tools/webtool/${name}`;
    const title = `${name[0]!.toUpperCase()}${name.slice(1)}`;
    return {
      method: "post",
      path,
      operationId: `webtool${title}`,
      tag: "Web tools",
      summary,
      description: `${description} For keys with the \`webtool\` tool; the gateway adds its own provider credential.`,
      envelope: "openai",
      charged: true,
      body: { kind: "json", schema: `Webtool${title}Request`, example: webtoolExamples[name] },
      success: { status: 200, description: "The answer.", content: json(`Webtool${title}Response`) },
      errors: statuses(AUTH, BODY, UPSTREAM),
    };
  });
  const research = "/v1/tools/webtool/research";
  return [
    ...webtool,
    {
      method: "post",
      path: research,
      operationId: "createResearch",
      tag: "Web tools",
      summary: "Start a research task",
      description:
        "Tavily's research, run as a job: the answer is the task, queued; poll it by id. Tavily's own client (`research`, `getResearch`) works unchanged.",
      envelope: "openai",
      charged: true,
      body: { kind: "json", schema: "WebtoolResearchRequest", example: { input: "What is new in solid-state batteries?", model: "mini" } },
      parameters: [idempotencyKey],
      success: { status: 200, description: "The task, queued.", content: json("WebtoolResearchQueued"), headers: ["idempotent-replayed"] },
      errors: statuses(AUTH, BODY, [409, 424]),
    },
    {
      method: "get",
      path: `${research}/{job_id}`,
      operationId: "getResearch",
      tag: "Web tools",
      summary: "Get a research task",
      description: "The task: 202 while it runs, 200 once it has completed or failed. Only the key that started it can read it.",
      envelope: "openai",
      charged: false,
      parameters: [{ ...jobId, description: "The task's `request_id`." }, preferWait],
      success: { status: 200, description: "The task, completed or failed.", content: json("WebtoolResearchStatus"), headers: ["preference-applied"] },
      pending: "The task, still running: `retry-after` says when to poll again.",
      errors: statuses(AUTH, [404]),
    },
    {
      method: "get",
      path: "/v1/tools/serptool/search",
      operationId: "serptoolSearch",
      tag: "Search",
      summary: "Search engine results",
      description:
        "SerpAPI's `search.json`: any of its engines and parameters, one value each; the ones below are checked. For keys with the `serptool` tool; the gateway adds its own provider credential.",
      envelope: "openai",
      charged: true,
      parameters: queryParameters(SerptoolSearchQuery, {
        q: "The search text; required for the `google` engine (the default).",
        engine: "A SerpAPI engine name; `google` by default.",
        num: "How many results (1 to 100).",
        start: "How many results to skip.",
        output: "Only `json`.",
        async: "Only `false`: asynchronous searches are not served.",
      }).map((p) => (p.name === "q" ? { ...p, example: "coffee" } : p)),
      success: { status: 200, description: "The answer.", content: json("SerptoolSearchResponse") },
      errors: statuses(AUTH, [400], UPSTREAM),
    },
  ];
}

const webtoolExamples: Record<(typeof webtoolCalls)[number][0], Record<string, unknown>> = {
  search: { query: "Who won the 2022 World Cup?", max_results: 3 },
  extract: { urls: ["https://en.wikipedia.org/wiki/Lighthouse"] },
  crawl: { url: "https://docs.tavily.com", max_depth: 1, limit: 10 },
  map: { url: "https://docs.tavily.com", limit: 20 },
};

function modelListOperations(): Operation[] {
  return [
    {
      method: "get",
      path: "/v1/models",
      operationId: "listModels",
      tag: "Models",
      summary: "List models",
      description: "The models this key may call, under their public names.",
      envelope: "openai",
      charged: false,
      success: { status: 200, description: "The models.", content: json("ModelList") },
      errors: AUTH,
    },
    {
      method: "get",
      path: "/v1/models/{model}",
      operationId: "getModel",
      tag: "Models",
      summary: "Get a model",
      description: "One model, if this key may call it.",
      envelope: "openai",
      charged: false,
      parameters: [{ name: "model", in: "path", required: true, description: "The model's public name.", schema: { type: "string" }, example: "gpt-4o-mini" }],
      success: { status: 200, description: "The model.", content: json("ModelEntry") },
      errors: statuses(AUTH, [404]),
    },
  ];
}

/** Every operation the gateway serves on its public port, in the order of the reference. */
export function publicOperations(): Operation[] {
  return [...modelListOperations(), ...modelOperations(), ...batchOperations(), ...toolOperations()];
}
