import { SerptoolSearchQuery } from "@gw/contracts";
import { queryParameters } from "./components";
import type { Envelope } from "./errors";
import { ref, type JsonSchema } from "./json-schema";
import { json, modelRoutes, type Content } from "./model-routes";

/** One operation of the public API, before it is written as OpenAPI. */
export interface Operation {
  method: "get" | "post";
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
        parameters: [jobId],
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
          headers: ["retry-after"],
        },
        errors: statuses(AUTH, [404]),
      },
    ];
  });
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
      parameters: [{ ...jobId, description: "The task's `request_id`." }],
      success: { status: 200, description: "The task, completed or failed.", content: json("WebtoolResearchStatus") },
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
  return [...modelListOperations(), ...modelOperations(), ...toolOperations()];
}
