/**
 * Every public route (docs/api.md, services/ingress/src/routes.ts) as the fuzz sees it: how it is
 * called, a request the gateway serves with the fuzz config (test/fuzz/upstreams.ts), its known
 * fields and the error envelope its refusals must carry. A path that takes several methods (the
 * Files and Batch APIs) has one entry per method, under the same name.
 */
export type Envelope = "openai" | "anthropic";
export type BodyKind = "json" | "multipart" | "none";
export type Method = "GET" | "POST" | "DELETE";

export interface PublicRoute {
  /** The route's name, e.g. "chat/completions", "async/messages", "webtool/search". */
  name: string;
  method: Method;
  /** The path as called; a job route's id is appended by the case, a file's or a batch's is in it. */
  path: string;
  body: BodyKind;
  envelope: Envelope;
  /** Models this route serves in the fuzz config (empty for tools and reads). */
  models: readonly string[];
  /**
   * A request the gateway answers 2xx, for the given model; for a multipart route, the form's text
   * fields (the file part is added by the encoder). The Files and Batch APIs' are well-formed but
   * name nothing that exists (see fileRoutes), so the gateway refuses them with its own 4xx.
   */
  valid(model: string): Record<string, unknown>;
  /** Fields the route reads, as dotted paths into `valid`'s body. */
  fields: readonly string[];
  /** String fields, where a hostile string goes. */
  strings: readonly string[];
  /** GET routes that end in a job id. */
  jobRoute?: true;
  /** POST routes that create a job (their accepted cases are waited for: see properties.ts). */
  createsJob?: true;
}

const chat = ["gpt", "claude", "mistral"];
const hi = [{ role: "user", content: "hi" }];

interface ModelRouteDef {
  name: string;
  models: string[];
  valid(model: string): Record<string, unknown>;
  fields: string[];
  strings: string[];
  body?: BodyKind;
}

const modelRoutes: ModelRouteDef[] = [
  {
    name: "chat/completions",
    models: chat,
    valid: (model) => ({ model, messages: hi, max_tokens: 16 }),
    fields: ["model", "messages", "messages.0", "messages.0.role", "messages.0.content", "max_tokens", "temperature", "stream", "tools", "tool_choice", "n"],
    strings: ["model", "messages.0.content", "messages.0.role"],
  },
  {
    name: "messages",
    models: chat,
    valid: (model) => ({ model, max_tokens: 16, messages: hi }),
    fields: ["model", "messages", "messages.0", "messages.0.role", "messages.0.content", "max_tokens", "system", "temperature", "stream", "stop_sequences"],
    strings: ["model", "messages.0.content", "system"],
  },
  {
    name: "responses",
    models: chat,
    valid: (model) => ({ model, input: "hi", max_output_tokens: 16 }),
    fields: ["model", "input", "instructions", "max_output_tokens", "stream", "tools", "temperature"],
    strings: ["model", "input", "instructions"],
  },
  {
    name: "completions",
    models: ["instruct"],
    valid: (model) => ({ model, prompt: "Say this", max_tokens: 5 }),
    fields: ["model", "prompt", "max_tokens", "temperature", "n", "stop", "stream", "echo"],
    strings: ["model", "prompt", "suffix"],
  },
  {
    name: "embeddings",
    models: ["embed-oa", "embed-co"],
    valid: (model) => ({ model, input: ["a", "b"], encoding_format: "float" }),
    fields: ["model", "input", "input.0", "encoding_format", "dimensions", "user"],
    strings: ["model", "input.0", "user"],
  },
  {
    name: "rerank",
    models: ["rr-co", "rr-jina"],
    valid: (model) => ({ model, query: "capital of France", documents: ["Berlin", "Paris"], top_n: 1 }),
    fields: ["model", "query", "documents", "documents.0", "top_n", "return_documents"],
    strings: ["model", "query", "documents.0"],
  },
  {
    name: "images/generations",
    models: ["image"],
    valid: (model) => ({ model, prompt: "a fox", n: 1 }),
    fields: ["model", "prompt", "n", "size", "response_format", "quality"],
    strings: ["model", "prompt", "size"],
  },
  {
    name: "audio/speech",
    models: ["tts"],
    valid: (model) => ({ model, input: "Hello", voice: "alloy", response_format: "wav" }),
    fields: ["model", "input", "voice", "response_format", "speed", "instructions"],
    strings: ["model", "input", "voice"],
  },
  {
    name: "audio/transcriptions",
    models: ["stt"],
    // The form's text fields; the file is added by the multipart encoder (generators.ts).
    valid: (model) => ({ model, response_format: "json" }),
    fields: ["model", "response_format", "language", "temperature"],
    strings: ["model", "language", "prompt"],
    body: "multipart",
  },
  {
    name: "ocr",
    models: ["ocr"],
    valid: (model) => ({ model, document: { type: "document_url", document_url: "https://example.com/a.pdf" } }),
    fields: ["model", "document", "document.type", "document.document_url", "pages", "include_image_base64"],
    strings: ["model", "document.document_url", "document.type"],
  },
];

const envelopeOf = (name: string): Envelope => (name === "messages" ? "anthropic" : "openai");

const toolRoutes: PublicRoute[] = [
  tool(
    "webtool/search",
    { query: "fuzzing gateways", max_results: 2 },
    ["query", "search_depth", "max_results", "include_domains", "exclude_domains"],
    ["query", "search_depth"],
  ),
  tool("webtool/extract", { urls: ["https://example.com/a"] }, ["urls", "urls.0", "extract_depth", "format"], ["urls.0", "format"]),
  tool("webtool/crawl", { url: "https://example.com", limit: 2 }, ["url", "limit", "instructions", "extract_depth"], ["url", "instructions"]),
  tool("webtool/map", { url: "https://example.com", limit: 2 }, ["url", "limit", "instructions"], ["url", "instructions"]),
  { ...tool("webtool/research", { input: "fuzzing gateways", model: "mini" }, ["input", "model", "output_schema"], ["input", "model"]), createsJob: true },
  {
    name: "webtool/research/{job_id}",
    method: "GET",
    path: "/v1/tools/webtool/research",
    body: "none",
    envelope: "openai",
    models: [],
    valid: () => ({}),
    fields: [],
    strings: [],
    jobRoute: true,
  },
  {
    name: "serptool/search",
    method: "GET",
    path: "/v1/tools/serptool/search",
    body: "none",
    envelope: "openai",
    models: [],
    // Query-string parameters: the case encodes them into the path.
    valid: () => ({ q: "fuzz", engine: "google" }),
    fields: ["q", "engine", "num", "start"],
    strings: ["q", "engine"],
  },
];

function tool(name: string, body: Record<string, unknown>, fields: string[], strings: string[]): PublicRoute {
  return { name, method: "POST", path: `/v1/tools/${name}`, body: "json", envelope: "openai", models: [], valid: () => structuredClone(body), fields, strings };
}

/**
 * Ids in OpenAI's form, as ingress's table takes them (`file-` and `batch_` with letters and digits):
 * well-formed, so a call reaches the jobs service, but naming no file or batch, so it is a 404 there.
 */
const FILE_ID = "file-00000000000000000000000000000000";
const BATCH_ID = "batch_00000000000000000000000000000000";

/** A route of the Files or Batch API without a body (a read, a delete, a cancel). */
function bare(name: string, method: Method, path: string): PublicRoute {
  return { name, method, path, body: "none", envelope: "openai", models: [], valid: () => ({}), fields: [], strings: [] };
}

/**
 * OpenAI's Files and Batch APIs, served by the jobs service. No case makes a file or a batch: an
 * upload goes as the multipart encoder writes it (bodies.ts: an `a.wav` file part), which jobs
 * refuses (a batch's input must be `.jsonl`), and a batch names FILE_ID, which does not exist. So no
 * batch ever runs during a fuzz, and no case's upstream count is another's.
 */
const fileRoutes: PublicRoute[] = [
  {
    ...bare("files", "POST", "/v1/files"),
    body: "multipart",
    valid: () => ({ purpose: "batch" }),
    fields: ["purpose", "expires_after[anchor]", "expires_after[seconds]"],
    strings: ["purpose", "expires_after[anchor]"],
  },
  bare("files", "GET", "/v1/files"),
  bare("files/{file_id}", "GET", `/v1/files/${FILE_ID}`),
  bare("files/{file_id}", "DELETE", `/v1/files/${FILE_ID}`),
  bare("files/{file_id}/content", "GET", `/v1/files/${FILE_ID}/content`),
  {
    ...bare("batches", "POST", "/v1/batches"),
    body: "json",
    valid: () => ({ input_file_id: FILE_ID, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { run: "fuzz" } }),
    fields: ["input_file_id", "endpoint", "completion_window", "metadata", "metadata.run", "output_expires_after", "output_expires_after.seconds"],
    strings: ["input_file_id", "endpoint", "completion_window", "metadata.run"],
  },
  bare("batches", "GET", "/v1/batches"),
  bare("batches/{batch_id}", "GET", `/v1/batches/${BATCH_ID}`),
  bare("batches/{batch_id}/cancel", "POST", `/v1/batches/${BATCH_ID}/cancel`),
];

export const publicRoutes: readonly PublicRoute[] = [
  { name: "models", method: "GET", path: "/v1/models", body: "none", envelope: "openai", models: [], valid: () => ({}), fields: [], strings: [] },
  { name: "models/{id}", method: "GET", path: "/v1/models/gpt", body: "none", envelope: "openai", models: [], valid: () => ({}), fields: [], strings: [] },
  ...modelRoutes.map(
    (r): PublicRoute => ({
      name: r.name,
      method: "POST",
      path: `/v1/${r.name}`,
      body: r.body ?? "json",
      envelope: envelopeOf(r.name),
      models: r.models,
      valid: r.valid,
      fields: r.fields,
      strings: r.strings,
    }),
  ),
  ...modelRoutes.map(
    (r): PublicRoute => ({
      name: `async/${r.name}`,
      method: "POST",
      path: `/v1/async/${r.name}`,
      body: r.body ?? "json",
      envelope: envelopeOf(r.name),
      models: r.models,
      valid: r.valid,
      fields: r.fields,
      strings: r.strings,
      createsJob: true,
    }),
  ),
  ...modelRoutes.map(
    (r): PublicRoute => ({
      name: `async/${r.name}/{job_id}`,
      method: "GET",
      path: `/v1/async/${r.name}`,
      body: "none",
      envelope: envelopeOf(r.name),
      models: [],
      valid: () => ({}),
      fields: [],
      strings: [],
      jobRoute: true,
    }),
  ),
  ...toolRoutes,
  ...fileRoutes,
];

/** Routes that read a body (where body classes apply). */
export const bodyRoutes = publicRoutes.filter((r) => r.body !== "none");
export const jsonRoutes = publicRoutes.filter((r) => r.body === "json");
export const jobRoutes = publicRoutes.filter((r) => r.jobRoute);

/**
 * The envelope a refusal on this request target must carry: Anthropic's on /v1/messages and
 * /v1/async/messages (and their job polls), OpenAI's everywhere else. Undefined for odd targets
 * (`//v1/messages`, `/V1/...`), where either is accepted as long as it is one of them.
 */
export function expectedEnvelope(target: string, exactRoute: boolean): Envelope | undefined {
  if (!exactRoute) return undefined;
  const path = target.split("?")[0] ?? "";
  return /^\/v1\/(async\/)?messages(\/|$)/.test(path) ? "anthropic" : "openai";
}
