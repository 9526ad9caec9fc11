import { createHash, randomUUID } from "node:crypto";
import { isUnparsedBody, startEmulator } from "./http-emulator";
import type { EmulatorOptions, Exchange, ProviderSpec, UpstreamEmulator } from "./http-emulator";
import { isRecord, valueForSchema } from "./synthetic";
import type { JsonObject } from "./synthetic";

/**
 * A fake Tavily API (provider-wire-formats.md §1, tavily-openapi.json) on node:http:
 * `POST /search`, `/extract`, `/crawl`, `/map`, `/research` and `GET /research/{request_id}`, with
 * `Authorization: Bearer <key>`, Tavily's `{"detail":{"error"}}` errors and scripted failures
 * (a scripted 429, 432, 433 or 500 without a body gets Tavily's own message).
 *
 * Like the real API, a result's `raw_content` is null unless `include_raw_content` was sent (the
 * OpenAPI types it string, with null as its example), and images are plain URL strings unless
 * `include_image_descriptions` was sent (the OpenAPI types them objects; provider-wire-formats §1.2).
 *
 * Answers are deterministic functions of the request: result URLs come from the query (or the
 * include_domains), page contents from the URL, so tests can predict them. `usage` is present only
 * when `include_usage` was sent (or `alwaysReportUsage`), as on the real API.
 */

export interface TavilyResearchOptions {
  /** GETs answered `pending` (202) before the task is `in_progress` (default 1). */
  pendingPolls?: number;
  /** GETs answered `in_progress` (202) before it has finished (default 1). */
  inProgressPolls?: number;
  /** Also wait this long after creation before finishing (default 0). */
  minDurationMs?: number;
  /** A task whose input this returns true for ends `failed` (default: inputs containing "[fail]"). */
  fails?: (input: string) => boolean;
}

export interface TavilyUpstreamOptions extends EmulatorOptions {
  /** Path prefix of the base URL (default ""). */
  basePath?: string;
  /** Pages a crawl or map of any site finds before `limit` applies (default 8). */
  sitePages?: number;
  /** Send `usage` even when the request did not ask (a provider change the gateway must absorb). */
  alwaysReportUsage?: boolean;
  research?: TavilyResearchOptions;
}

export interface TavilyResearchTask {
  requestId: string;
  input: string;
  model: string;
  createdAt: string;
  request: JsonObject;
  polls: number;
  /** Set when the task's end is scripted: "failed" or "completed". */
  outcome: "completed" | "failed";
}

export interface TavilyUpstream extends UpstreamEmulator {
  /** Research tasks by request id, as created through `POST /research`. */
  readonly researchTasks: ReadonlyMap<string, TavilyResearchTask>;
  /** The next `count` research tasks created end `failed`, whatever their input. */
  failNextResearch(count?: number): void;
  /** Changes how research tasks progress from now on. */
  setResearchOptions(options: TavilyResearchOptions): void;
}

/** Texts from tavily-openapi.json's examples for each status. */
const DEFAULT_ERRORS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized: missing or invalid API key.",
  403: "URL is not supported",
  404: "Not Found",
  429: "Your request has been blocked due to excessive requests. Please reduce rate of requests.",
  432: "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com",
  433: "This request exceeds the pay-as-you-go limit. You can increase your limit on the Tavily dashboard.",
  500: "Internal Server Error",
};

export function tavilyError(message: string): { detail: { error: string } } {
  return { detail: { error: message } };
}

export async function startTavilyUpstream(opts: TavilyUpstreamOptions = {}): Promise<TavilyUpstream> {
  const basePath = (opts.basePath ?? "").replace(/\/$/, "");
  const sitePages = opts.sitePages ?? 8;
  const tasks = new Map<string, TavilyResearchTask & { createdMs: number }>();
  let research: TavilyResearchOptions = { ...opts.research };
  let failNext = 0;

  const fail = (ex: Exchange, status: number, message: string) => ex.json(status, tavilyError(message));

  const spec: ProviderSpec = {
    basePath,
    commonHeaders: () => ({}),
    precheck(ex) {
      if (opts.apiKey === undefined) return false;
      const auth = ex.req.headers.authorization ?? "";
      const key = /^bearer /i.test(auth) ? auth.slice(7).trim() : "";
      if (key !== opts.apiKey) {
        fail(ex, 401, DEFAULT_ERRORS[401]!);
        return true;
      }
      return false;
    },
    errorBody: (status) => tavilyError(DEFAULT_ERRORS[status] ?? `Request failed with status ${status}`),
    handle,
  };

  function handle(ex: Exchange): void {
    const { method, path } = ex.record;
    const route = path.startsWith(basePath) ? path.slice(basePath.length) : path;
    const researchId = /^\/research\/([^/]+)$/.exec(route)?.[1];
    if (researchId !== undefined) {
      if (method !== "GET") return fail(ex, 405, "Method Not Allowed");
      return readResearch(ex, decodeURIComponent(researchId));
    }
    const post = { "/search": search, "/extract": extract, "/crawl": crawl, "/map": map, "/research": startResearch }[route];
    if (!post) return fail(ex, 404, "Not Found");
    if (method !== "POST") return fail(ex, 405, "Method Not Allowed");
    const body = ex.record.body;
    if (isUnparsedBody(body) || !isRecord(body)) return fail(ex, 400, "Invalid JSON body");
    post(ex, body);
  }

  const usage = (body: JsonObject, credits: number) => (body.include_usage === true || opts.alwaysReportUsage ? { usage: { credits } } : {});
  const responseTime = () => Math.round((0.2 + Math.random()) * 100) / 100;

  function search(ex: Exchange, body: JsonObject): void {
    if (typeof body.query !== "string" || body.query.trim() === "") return fail(ex, 400, "Query is missing or empty.");
    const max = body.max_results ?? 5;
    if (typeof max !== "number" || !Number.isInteger(max) || max < 0 || max > 20) {
      return fail(ex, 400, "Invalid max_results. Must be an integer between 0 and 20.");
    }
    const depth = body.search_depth ?? "basic";
    if (!["basic", "advanced", "fast", "ultra-fast"].includes(String(depth))) {
      return fail(ex, 400, "Invalid search_depth. Must be 'basic', 'advanced', 'fast' or 'ultra-fast'.");
    }
    const topic = body.topic ?? "general";
    if (!["general", "news", "finance"].includes(String(topic))) return fail(ex, 400, "Invalid topic. Must be 'general', 'news' or 'finance'.");
    const query = body.query;
    const domains = stringList(body.include_domains);
    const excluded = new Set(stringList(body.exclude_domains));
    const slug = slugOf(query);
    const pool = (domains.length > 0 ? domains : [`${slug}.example.com`, "en.wikipedia.org", "news.example.org"]).filter((d) => !excluded.has(d));
    const withImages = body.include_images === true;
    const described = withImages && body.include_image_descriptions === true;
    const image = (u: string) => (described ? { url: u, description: `An image about ${query}` } : u);
    const results = Array.from({ length: pool.length === 0 ? 0 : max }, (_, i) => {
      const domain = pool[i % pool.length]!;
      const url = `https://${domain}/${slug}/${i + 1}`;
      const result: JsonObject = {
        url,
        title: `${query} (result ${i + 1})`,
        content: `About ${query}: result ${i + 1} from ${domain}.`,
        score: Math.round((0.95 - i * 0.03) * 1e6) / 1e6,
        raw_content: body.include_raw_content ? pageContent(url, body.include_raw_content === "text" ? "text" : "markdown") : null,
      };
      if (body.include_favicon === true) result.favicon = `https://${domain}/favicon.ico`;
      if (withImages) result.images = [image(`https://${domain}/${slug}/${i + 1}.png`)];
      result.id = `${hash(url).slice(0, 6)}-${String(i).padStart(2, "0")}`;
      return result;
    });
    const answer: JsonObject = {
      query,
      ...(body.include_answer ? { answer: `A short answer about ${query}.` } : {}),
      images: withImages ? [image(`https://images.example.com/${slug}.png`)] : [],
      results,
      ...(body.auto_parameters === true ? { auto_parameters: { topic, search_depth: depth } } : {}),
      response_time: responseTime(),
      ...usage(body, depth === "advanced" ? 2 : 1),
      request_id: randomUUID(),
    };
    ex.json(200, answer);
  }

  function extract(ex: Exchange, body: JsonObject): void {
    const urls = typeof body.urls === "string" ? [body.urls] : body.urls;
    if (!Array.isArray(urls) || urls.length === 0 || !urls.every((u) => typeof u === "string")) {
      return fail(ex, 400, "urls must be a URL or a list of URLs.");
    }
    if (urls.length > 20) return fail(ex, 400, "Max 20 URLs are allowed.");
    const format = body.format === "text" ? "text" : "markdown";
    const results: JsonObject[] = [];
    const failed: JsonObject[] = [];
    for (const u of urls as string[]) {
      if (!isHttpUrl(u) || u.includes("unreachable")) {
        failed.push({ url: u, error: "Failed to fetch url" });
        continue;
      }
      let raw = pageContent(u, format);
      if (typeof body.query === "string" && body.query !== "") {
        const chunks = typeof body.chunks_per_source === "number" ? body.chunks_per_source : 3;
        raw = Array.from({ length: chunks }, (_, i) => `Chunk ${i + 1} of ${u} about ${body.query as string}`).join(" [...] ");
      }
      const result: JsonObject = { url: u, raw_content: raw, images: body.include_images === true ? [`${u.replace(/\/$/, "")}/figure.png`] : [] };
      if (body.include_favicon === true) result.favicon = `${new URL(u).origin}/favicon.ico`;
      results.push(result);
    }
    const credits = Math.ceil(results.length / 5) * (body.extract_depth === "advanced" ? 2 : 1);
    ex.json(200, { results, failed_results: failed, response_time: responseTime(), ...usage(body, credits), request_id: randomUUID() });
  }

  /** The pages of a site, breadth-first: the root, then /page-1 … as many as `sitePages`. */
  function sitePagesOf(ex: Exchange, body: JsonObject): { base: string; pages: string[] } | undefined {
    if (typeof body.url !== "string" || body.url.trim() === "") return void fail(ex, 400, "url is required.");
    const root = /^https?:\/\//.test(body.url) ? body.url : `https://${body.url}`;
    if (!isHttpUrl(root)) return void fail(ex, 400, "Invalid url.");
    const parsed = new URL(root);
    if (parsed.hostname.endsWith(".unsupported")) return void fail(ex, 403, DEFAULT_ERRORS[403]!);
    const limit = body.limit ?? 50;
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1) return void fail(ex, 400, "limit must be a positive integer.");
    const origin = parsed.origin;
    const pages = [origin, ...Array.from({ length: Math.max(0, sitePages - 1) }, (_, i) => `${origin}/page-${i + 1}`)];
    const selected = stringList(body.select_paths).map((p) => new RegExp(p));
    const excluded = stringList(body.exclude_paths).map((p) => new RegExp(p));
    const kept = pages.filter((p) => {
      const path = new URL(p).pathname;
      return (selected.length === 0 || selected.some((r) => r.test(path))) && !excluded.some((r) => r.test(path));
    });
    return { base: parsed.host, pages: kept.slice(0, limit) };
  }

  function crawl(ex: Exchange, body: JsonObject): void {
    const site = sitePagesOf(ex, body);
    if (!site) return;
    const format = body.format === "text" ? "text" : "markdown";
    const results = site.pages.map((u) => {
      const result: JsonObject = { url: u, raw_content: pageContent(u, format) };
      if (body.include_images === true) result.images = [`${u}/hero.png`];
      if (body.include_favicon === true) result.favicon = `${new URL(u).origin}/favicon.ico`;
      return result;
    });
    const perTen = body.instructions ? 2 : 1;
    ex.json(200, {
      base_url: site.base,
      results,
      response_time: responseTime(),
      ...usage(body, Math.ceil(results.length / 10) * perTen),
      request_id: randomUUID(),
    });
  }

  function map(ex: Exchange, body: JsonObject): void {
    const site = sitePagesOf(ex, body);
    if (!site) return;
    const perTen = body.instructions ? 2 : 1;
    ex.json(200, {
      base_url: site.base,
      results: site.pages,
      response_time: responseTime(),
      ...usage(body, Math.ceil(site.pages.length / 10) * perTen),
      request_id: randomUUID(),
    });
  }

  function startResearch(ex: Exchange, body: JsonObject): void {
    if (typeof body.input !== "string" || body.input.trim() === "") return fail(ex, 400, "input is required.");
    const model = body.model ?? "auto";
    if (!["mini", "pro", "auto"].includes(String(model))) return fail(ex, 400, "Invalid model. Must be 'mini', 'pro' or 'auto'.");
    // The SSE form is not emulated: the gateway runs research as a polled job.
    if (body.stream === true) return fail(ex, 400, "Streaming research is not supported by this emulator.");
    const requestId = randomUUID();
    const createdAt = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    const fails = research.fails ?? ((input: string) => input.includes("[fail]"));
    let outcome: "completed" | "failed" = fails(body.input) ? "failed" : "completed";
    if (failNext > 0) {
      failNext--;
      outcome = "failed";
    }
    tasks.set(requestId, { requestId, input: body.input, model: String(model), createdAt, request: body, polls: 0, outcome, createdMs: Date.now() });
    // tavily-openapi.json says 201; tavily-python accepts only 200 here (provider-wire-formats.md §1.6).
    ex.json(200, { request_id: requestId, created_at: createdAt, status: "pending", input: body.input, model: String(model), response_time: 1 });
  }

  function readResearch(ex: Exchange, requestId: string): void {
    const task = tasks.get(requestId);
    if (!task) return fail(ex, 404, "Research task not found");
    task.polls++;
    const pending = research.pendingPolls ?? 1;
    const running = research.inProgressPolls ?? 1;
    const old = Date.now() - task.createdMs >= (research.minDurationMs ?? 0);
    if (task.polls <= pending) return ex.json(202, { request_id: requestId, status: "pending", response_time: 0 });
    if (task.polls <= pending + running || !old) return ex.json(202, { request_id: requestId, status: "in_progress", response_time: 0 });
    if (task.outcome === "failed") return ex.json(200, { request_id: requestId, status: "failed", response_time: 2 });
    const schema = task.request.output_schema;
    const sources = [1, 2].map((i) => ({
      title: `Source ${i} on ${task.input}`,
      url: `https://${slugOf(task.input)}.example.com/source-${i}`,
      favicon: `https://${slugOf(task.input)}.example.com/favicon.ico`,
    }));
    ex.json(200, {
      request_id: requestId,
      created_at: task.createdAt,
      completed_at: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
      status: "completed",
      content: isRecord(schema) ? valueForSchema(schema, `Findings on ${task.input}`) : `# Research report\n\n${task.input}: findings [1][2].`,
      sources,
      response_time: 2,
      ...(ex.record.query.include_usage === "true" ? { usage: { credits: task.model === "pro" ? 20 : 10 } } : {}),
    });
  }

  const base = await startEmulator(spec, opts);
  const forget = base.reset.bind(base);
  return Object.assign(base, {
    researchTasks: tasks as ReadonlyMap<string, TavilyResearchTask>,
    failNextResearch(count = 1) {
      failNext += count;
    },
    setResearchOptions(options: TavilyResearchOptions) {
      research = { ...options };
    },
    reset() {
      forget();
      tasks.clear();
      failNext = 0;
      research = { ...opts.research };
    },
  });
}

/** The page text a URL "has": markdown with a heading, or the same words as plain text. */
export function pageContent(url: string, format: "markdown" | "text" = "markdown"): string {
  return format === "markdown" ? `# ${url}\n\nThe content of ${url}.` : `${url}\nThe content of ${url}.`;
}

function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

function slugOf(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "")
      .slice(0, 40) || "query"
  );
}

function hash(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function isHttpUrl(text: string): boolean {
  try {
    return ["http:", "https:"].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}
