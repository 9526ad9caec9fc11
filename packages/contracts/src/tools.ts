import { z } from "zod";
import { toolNames } from "./admin";

/**
 * The Tools API (`/v1/tools/webtool/*`, `/v1/tools/serptool/search`). Requests are the providers'
 * own wire formats (provider-wire-formats.md §1 Tavily, §2 SerpAPI), validated where the spec or the
 * provider's OpenAPI gives a type or a bound; options we do not list pass through unchanged, so a
 * client written for the provider keeps working when the provider adds one. Upstream answers are
 * read leniently (only what clients rely on is required) and keep the provider's shape.
 */

export const ToolName = z.enum(toolNames);
export type ToolName = z.infer<typeof ToolName>;

/** The gateway's bounds: Tavily's documented ones, and ours where Tavily gives none (crawl and map `limit`). */
export const webtoolBounds = {
  /** Tavily: 0 ≤ max_results ≤ 20; 5 when absent. */
  searchMaxResults: 20,
  searchDefaultMaxResults: 5,
  searchMaxIncludeDomains: 300,
  searchMaxExcludeDomains: 150,
  /** Tavily's 400 example: at most 20 URLs per extract. */
  extractMaxUrls: 20,
  /** Ours: a crawl returns each page's content, so 100 pages is already megabytes. Tavily's default is 50. */
  crawlMaxLimit: 100,
  /** Ours: a map returns URLs only. */
  mapMaxLimit: 500,
  /** Tavily's default `limit` for crawl and map. */
  defaultLimit: 50,
  maxDepth: 5,
  maxBreadth: 500,
  researchMaxDomains: 20,
  researchMaxFiles: 5,
} as const;

/**
 * Body fields and query parameters that carry a credential. The gateway adds its own upstream
 * credential; a caller sending one is told not to (400) and nothing is forwarded. Compared after
 * lower-casing and removing `_` and `-`, so `api_key`, `apiKey`, `API-KEY` and `x-api-key` all match.
 */
const credentialNames = new Set([
  "apikey",
  "xapikey",
  "key",
  "token",
  "accesstoken",
  "authtoken",
  "bearer",
  "auth",
  "authorization",
  "secret",
  "clientsecret",
  "password",
  "tavilyapikey",
  "serpapikey",
  "serpapiapikey",
]);

/** The first credential-like field name of a body or query, if any. */
export function findCredentialField(fields: object | null | undefined): string | undefined {
  if (!fields) return undefined;
  return Object.keys(fields).find((name) => credentialNames.has(name.toLowerCase().replace(/[_-]/g, "")));
}

/** Optional in the providers' sense: absent or null (tavily-python sends unset options as null). */
const opt = <T extends z.ZodType>(schema: T) => schema.nullish();
const flag = opt(z.boolean());
const int = (field: string, min: number, max?: number) => {
  let schema = z
    .number({ message: `${field} must be a number` })
    .int(`${field} must be a whole number`)
    .min(min, `${field} must be at least ${min}`);
  if (max !== undefined) schema = schema.max(max, `${field} must be at most ${max}`);
  return schema;
};
const seconds = (field: string, min: number, max: number) =>
  z
    .number({ message: `${field} must be a number of seconds` })
    .min(min, `${field} must be at least ${min}`)
    .max(max, `${field} must be at most ${max}`);
const strings = (field: string, max?: number) => {
  const list = z.array(z.string(), { message: `${field} must be a list of strings` });
  return max === undefined ? list : list.max(max, `${field} takes at most ${max} entries`);
};
const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "dates are written YYYY-MM-DD");
const extractDepth = z.enum(["basic", "advanced"]);
const contentFormat = z.enum(["markdown", "text"]);

/** `POST /v1/tools/webtool/search` (Tavily `POST /search`). */
export const WebtoolSearchRequest = z.looseObject({
  query: z.string({ message: "query is required" }).trim().min(1, "query cannot be empty"),
  search_depth: opt(z.enum(["basic", "advanced", "fast", "ultra-fast"])),
  chunks_per_source: opt(int("chunks_per_source", 1, 3)),
  max_results: opt(int("max_results", 0, webtoolBounds.searchMaxResults)),
  topic: opt(z.string()),
  time_range: opt(z.string()),
  days: opt(int("days", 1)),
  start_date: opt(day),
  end_date: opt(day),
  include_answer: opt(z.union([z.boolean(), z.enum(["basic", "advanced"])])),
  include_raw_content: opt(z.union([z.boolean(), contentFormat])),
  include_images: flag,
  include_image_descriptions: flag,
  include_favicon: flag,
  include_domains: opt(strings("include_domains", webtoolBounds.searchMaxIncludeDomains)),
  exclude_domains: opt(strings("exclude_domains", webtoolBounds.searchMaxExcludeDomains)),
  country: opt(z.string()),
  auto_parameters: flag,
  exact_match: flag,
  include_usage: flag,
  safe_search: flag,
});
export type WebtoolSearchRequest = z.infer<typeof WebtoolSearchRequest>;

const url = z.string({ message: "url must be a string" }).trim().min(1, "url cannot be empty");

/** `POST /v1/tools/webtool/extract` (Tavily `POST /extract`). */
export const WebtoolExtractRequest = z.looseObject({
  urls: z
    .union([url, z.array(url)], { message: "urls must be a URL or a list of URLs" })
    // Checked after the union, so the message says what is wrong rather than "no branch matched".
    .superRefine((urls, ctx) => {
      if (!Array.isArray(urls)) return;
      if (urls.length === 0) ctx.addIssue({ code: "custom", message: "urls cannot be empty" });
      if (urls.length > webtoolBounds.extractMaxUrls) ctx.addIssue({ code: "custom", message: `urls takes at most ${webtoolBounds.extractMaxUrls} URLs` });
    }),
  query: opt(z.string()),
  chunks_per_source: opt(int("chunks_per_source", 1, 5)),
  extract_depth: opt(extractDepth),
  include_images: flag,
  include_favicon: flag,
  format: opt(contentFormat),
  timeout: opt(seconds("timeout", 1, 60)),
  include_usage: flag,
});
export type WebtoolExtractRequest = z.infer<typeof WebtoolExtractRequest>;

const siteWalk = {
  url,
  instructions: opt(z.string()),
  max_depth: opt(int("max_depth", 1, webtoolBounds.maxDepth)),
  max_breadth: opt(int("max_breadth", 1, webtoolBounds.maxBreadth)),
  select_paths: opt(strings("select_paths")),
  select_domains: opt(strings("select_domains")),
  exclude_paths: opt(strings("exclude_paths")),
  exclude_domains: opt(strings("exclude_domains")),
  allow_external: flag,
  timeout: opt(seconds("timeout", 10, 150)),
  include_usage: flag,
};

/** `POST /v1/tools/webtool/crawl` (Tavily `POST /crawl`). */
export const WebtoolCrawlRequest = z.looseObject({
  ...siteWalk,
  limit: opt(int("limit", 1, webtoolBounds.crawlMaxLimit)),
  chunks_per_source: opt(int("chunks_per_source", 1, 5)),
  extract_depth: opt(extractDepth),
  format: opt(contentFormat),
  include_images: flag,
  include_favicon: flag,
});
export type WebtoolCrawlRequest = z.infer<typeof WebtoolCrawlRequest>;

/** `POST /v1/tools/webtool/map` (Tavily `POST /map`). */
export const WebtoolMapRequest = z.looseObject({
  ...siteWalk,
  limit: opt(int("limit", 1, webtoolBounds.mapMaxLimit)),
});
export type WebtoolMapRequest = z.infer<typeof WebtoolMapRequest>;

const responseTime = z.union([z.number(), z.string()]).optional();

/**
 * Tavily's answers as the gateway reads them. `@tavily/core` maps over `results` and `images`
 * (search) and `failed_results` (extract), so those must be lists; an upstream that leaves one out
 * gets an empty one rather than crashing the client.
 */
export const WebtoolSearchResponse = z.looseObject({
  query: z.string().optional(),
  results: z.array(z.looseObject({ url: z.string() })),
  images: z.array(z.unknown()).default([]),
  response_time: responseTime,
});
export type WebtoolSearchResponse = z.infer<typeof WebtoolSearchResponse>;

export const WebtoolExtractResponse = z.looseObject({
  results: z.array(z.looseObject({ url: z.string() })),
  failed_results: z.array(z.looseObject({ url: z.string() })).default([]),
  response_time: responseTime,
});
export type WebtoolExtractResponse = z.infer<typeof WebtoolExtractResponse>;

export const WebtoolCrawlResponse = z.looseObject({
  base_url: z.string().optional(),
  results: z.array(z.looseObject({ url: z.string() })),
  response_time: responseTime,
});
export type WebtoolCrawlResponse = z.infer<typeof WebtoolCrawlResponse>;

/** Map results are plain URL strings. */
export const WebtoolMapResponse = z.looseObject({
  base_url: z.string().optional(),
  results: z.array(z.string()),
  response_time: responseTime,
});
export type WebtoolMapResponse = z.infer<typeof WebtoolMapResponse>;

/**
 * `POST /research` (tavily-openapi.json). The gateway runs research as a job polled by id, so only
 * the non-streaming form is accepted (`stream: true` is a 400).
 */
export const WebtoolResearchRequest = z.looseObject({
  input: z.string({ message: "input is required" }).trim().min(1, "input cannot be empty"),
  model: opt(z.enum(["mini", "pro", "auto"])),
  stream: opt(z.literal(false, { message: "stream: true is not supported: research runs as a job; poll it by id" })),
  output_schema: opt(z.looseObject({ properties: z.record(z.string(), z.unknown()), required: z.array(z.string()).optional() })),
  citation_format: opt(z.enum(["numbered", "mla", "apa", "chicago"])),
  include_domains: opt(strings("include_domains", webtoolBounds.researchMaxDomains)),
  exclude_domains: opt(strings("exclude_domains", webtoolBounds.researchMaxDomains)),
  output_length: opt(z.enum(["short", "standard", "long"])),
  files: opt(
    z
      .array(z.looseObject({ name: z.string().min(1), data: z.string().min(1), type: z.literal("base64").optional() }))
      .max(webtoolBounds.researchMaxFiles, `files takes at most ${webtoolBounds.researchMaxFiles} entries`),
  ),
});
export type WebtoolResearchRequest = z.infer<typeof WebtoolResearchRequest>;

/** The answer to `POST /research`: the task, queued. */
export const WebtoolResearchQueued = z.looseObject({
  request_id: z.string().min(1),
  created_at: z.string(),
  status: z.string(),
  input: z.string(),
  model: z.string(),
  response_time: z.number().optional(),
});
export type WebtoolResearchQueued = z.infer<typeof WebtoolResearchQueued>;

export const WebtoolResearchSource = z.looseObject({ url: z.string(), title: z.string().optional(), favicon: z.string().optional() });
export type WebtoolResearchSource = z.infer<typeof WebtoolResearchSource>;

/** `GET /research/{request_id}` while the task runs (HTTP 202). */
export const WebtoolResearchRunning = z.looseObject({
  request_id: z.string(),
  status: z.enum(["pending", "in_progress"]),
  response_time: z.number().optional(),
});
/** Finished (HTTP 200): `content` is an object when `output_schema` was sent. */
export const WebtoolResearchCompleted = z.looseObject({
  request_id: z.string(),
  created_at: z.string().optional(),
  completed_at: z.string().optional(),
  status: z.literal("completed"),
  content: z.union([z.string(), z.record(z.string(), z.unknown())]),
  sources: z.array(WebtoolResearchSource),
  response_time: z.number().optional(),
});
export const WebtoolResearchFailed = z.looseObject({
  request_id: z.string(),
  status: z.literal("failed"),
  response_time: z.number().optional(),
});
/**
 * Any other status the provider may add: the spec's status set is open. A known status whose body
 * lacks its fields (a `completed` without `content`) is malformed, not "other".
 */
export const WebtoolResearchOther = z.looseObject({
  request_id: z.string(),
  status: z.string().refine((status) => !["completed", "failed", "pending", "in_progress"].includes(status), { message: "a known status without its fields" }),
});

export const WebtoolResearchStatus = z.union([WebtoolResearchCompleted, WebtoolResearchFailed, WebtoolResearchRunning, WebtoolResearchOther]);
export type WebtoolResearchStatus = z.infer<typeof WebtoolResearchStatus>;

/** SerpAPI's per-request limit on Google results (`num`). */
export const serptoolBounds = { maxNum: 100 } as const;

const numberParam = (field: string, min: number, max?: number) =>
  z
    .string()
    .regex(/^\d+$/, `${field} must be a whole number`)
    .refine((v) => Number(v) >= min && (max === undefined || Number(v) <= max), {
      message: max === undefined ? `${field} must be at least ${min}` : `${field} must be between ${min} and ${max}`,
    });

/**
 * `GET /v1/tools/serptool/search` query parameters (SerpAPI `GET /search.json`). Every value is a
 * single string (a parameter given twice is a 400). `q` is required for Google (the default engine);
 * other engines name their query parameter differently and are checked by the provider.
 */
export const SerptoolSearchQuery = z
  .object({
    q: z.string().trim().min(1, "q cannot be empty").optional(),
    engine: z
      .string()
      .regex(/^[a-z0-9_]{1,64}$/, "engine must be a SerpAPI engine name such as google")
      .optional(),
    num: numberParam("num", 1, serptoolBounds.maxNum).optional(),
    start: numberParam("start", 0).optional(),
    output: z.literal("json", { message: "output must be json (the only format the gateway returns)" }).optional(),
    async: z.enum(["false"], { message: "async searches are not supported: their results live in the provider's archive" }).optional(),
  })
  .catchall(z.string({ message: "each query parameter must be given once" }))
  .superRefine((query, ctx) => {
    if ((query.engine === undefined || query.engine === "google") && query.q === undefined) {
      ctx.addIssue({ code: "custom", path: ["q"], message: "q is required (the search text)" });
    }
  });
export type SerptoolSearchQuery = z.infer<typeof SerptoolSearchQuery>;

/** A SerpAPI answer: an object, with `search_metadata` when the provider sent it. */
export const SerptoolSearchResponse = z.looseObject({
  search_metadata: z.looseObject({}).optional(),
  search_parameters: z.looseObject({}).optional(),
});
export type SerptoolSearchResponse = z.infer<typeof SerptoolSearchResponse>;
