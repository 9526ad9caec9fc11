/**
 * The public route table: every path ingress serves, its method, where it goes, what body it takes
 * and how it is charged. A request is matched here before anything is read or looked up, so a path or
 * a method the table does not know costs a 404 or 405 and nothing else, and every label a metric
 * carries comes from this table, never from what the caller typed.
 */
export type Backend = "inference" | "tools" | "jobs";
/** What a route's body must be: JSON, a multipart form, or nothing at all. */
export type BodyKind = "json" | "multipart" | "none";

export interface RouteTarget {
  backend: Backend;
  method: "GET" | "POST";
  /** Low-cardinality label for metrics and logs. */
  label: string;
  body: BodyKind;
  /** The largest body the route takes, before the operator's overall limit (GATEWAY_BODY_LIMIT_MB). */
  maxBodyBytes: number;
  /** The tool a tools route needs permission for. */
  tool?: "webtool" | "serptool";
  /**
   * Whether the call counts against the rate limits (reads are free) and which model route's token
   * estimate applies to it: creating a job counts like the call it wraps.
   */
  charge?: { tokenRoute?: string };
}

export type RouteMatch = { target: RouteTarget } | { error: "not_found" } | { error: "method_not_allowed"; allow: string };

const MiB = 1024 * 1024;

/**
 * Each model route's body bound: a chat body may carry images and PDFs inline (Anthropic takes up to
 * 32 MB), an upload the 25 MB OpenAI allows plus the form around it, while an image prompt or a
 * speech input is a few kilobytes of text.
 */
const modelRoutes: Record<string, { body: BodyKind; maxBodyBytes: number }> = {
  "chat/completions": { body: "json", maxBodyBytes: 32 * MiB },
  messages: { body: "json", maxBodyBytes: 32 * MiB },
  responses: { body: "json", maxBodyBytes: 32 * MiB },
  completions: { body: "json", maxBodyBytes: 4 * MiB },
  embeddings: { body: "json", maxBodyBytes: 8 * MiB },
  rerank: { body: "json", maxBodyBytes: 8 * MiB },
  "images/generations": { body: "json", maxBodyBytes: 1 * MiB },
  "audio/speech": { body: "json", maxBodyBytes: 1 * MiB },
  "audio/transcriptions": { body: "multipart", maxBodyBytes: 26 * MiB },
  ocr: { body: "json", maxBodyBytes: 32 * MiB },
};
/** Tool bodies are a query and a few options; the tools service reads at most 1 MiB. */
const TOOL_BODY_BYTES = 1 * MiB;
const webtoolOperations = ["search", "extract", "crawl", "map"];

const exact = new Map<string, RouteTarget>();
for (const [name, body] of Object.entries(modelRoutes)) {
  const path = `/v1/${name}`;
  exact.set(path, { backend: "inference", method: "POST", label: path, ...body, charge: { tokenRoute: path } });
  exact.set(`/v1/async/${name}`, { backend: "jobs", method: "POST", label: "/v1/async", ...body, charge: { tokenRoute: path } });
}
exact.set("/v1/models", { backend: "inference", method: "GET", label: "/v1/models", body: "none", maxBodyBytes: 0 });
for (const operation of webtoolOperations) {
  const path = `/v1/tools/webtool/${operation}`;
  exact.set(path, { backend: "tools", method: "POST", label: "/v1/tools/webtool", body: "json", maxBodyBytes: TOOL_BODY_BYTES, tool: "webtool", charge: {} });
}
exact.set("/v1/tools/webtool/research", {
  backend: "jobs",
  method: "POST",
  label: "/v1/tools/webtool/research",
  body: "json",
  maxBodyBytes: TOOL_BODY_BYTES,
  tool: "webtool",
  charge: {},
});
exact.set("/v1/tools/serptool/search", {
  backend: "tools",
  method: "GET",
  label: "/v1/tools/serptool",
  body: "none",
  maxBodyBytes: 0,
  tool: "serptool",
  charge: {},
});

const modelRead: RouteTarget = { backend: "inference", method: "GET", label: "/v1/models/:model", body: "none", maxBodyBytes: 0 };
const jobRead: RouteTarget = { backend: "jobs", method: "GET", label: "/v1/async", body: "none", maxBodyBytes: 0 };
const researchRead: RouteTarget = { ...jobRead, label: "/v1/tools/webtool/research", tool: "webtool" };

/**
 * Every route as a path template (`{model}`, `{job_id}` where readTarget matches a name) with its
 * target: what the API reference must document, no more and no less (its test holds it to this).
 */
export function publicRoutes(): { path: string; target: RouteTarget }[] {
  return [
    ...[...exact].map(([path, target]) => ({ path, target })),
    { path: "/v1/models/{model}", target: modelRead },
    ...Object.keys(modelRoutes).map((name) => ({ path: `/v1/async/${name}/{job_id}`, target: jobRead })),
    { path: "/v1/tools/webtool/research/{job_id}", target: researchRead },
  ];
}

/**
 * The route a usage record names: the path itself for a route the table knows exactly, the template
 * for one with an id in it (`/v1/async/chat/completions/{job_id}`), so the ledger's route column
 * holds as few values as the table has routes.
 */
export function ledgerRouteOf(path: string, target: RouteTarget): string {
  if (exact.has(path)) return path;
  if (target === modelRead) return "/v1/models/{model}";
  return `${path.slice(0, path.lastIndexOf("/"))}/{job_id}`;
}

/** Our job ids are `job_` and 32 hex digits; anything else cannot name a job and goes no further. */
const JOB_ID = /^job_[A-Za-z0-9]{1,64}$/;

/** Matches a normalised path (see normalisePath) and a method against the table. */
export function resolveRoute(path: string, method: string): RouteMatch {
  const target = exact.get(path) ?? readTarget(path);
  if (!target) return { error: "not_found" };
  const wanted = method === "HEAD" ? "GET" : method;
  return wanted === target.method ? { target } : { error: "method_not_allowed", allow: target.method };
}

function readTarget(path: string): RouteTarget | undefined {
  if (path.startsWith("/v1/models/")) return modelRead;
  const slash = path.lastIndexOf("/");
  const id = path.slice(slash + 1);
  if (!JOB_ID.test(id)) return undefined;
  const parent = path.slice(0, slash);
  if (parent === "/v1/tools/webtool/research") return researchRead;
  return parent.startsWith("/v1/async/") && Object.hasOwn(modelRoutes, parent.slice("/v1/async/".length)) ? jobRead : undefined;
}

/** Longer than any route with any id: a path past this names nothing. */
const MAX_PATH_LENGTH = 1024;
const PERCENT = /%(?![0-9A-Fa-f]{2})/;

/**
 * The one canonical form of a path, computed once at the door and the only one the backends see:
 * repeated slashes collapse and a trailing slash goes. Undefined for a path that can name nothing:
 * too long, a `.` or `..` segment, or percent-encoding that is malformed or not UTF-8.
 */
export function normalisePath(path: string): string | undefined {
  if (path.length > MAX_PATH_LENGTH || path.charCodeAt(0) !== 47 /* / */) return undefined;
  let canonical = path;
  if (canonical.includes("//")) canonical = canonical.replace(/\/{2,}/g, "/");
  if (canonical.length > 1 && canonical.endsWith("/")) canonical = canonical.slice(0, -1);
  if (canonical.includes("/.")) {
    for (const segment of canonical.split("/")) if (segment === "." || segment === "..") return undefined;
  }
  if (canonical.includes("%")) {
    if (PERCENT.test(canonical)) return undefined;
    try {
      decodeURIComponent(canonical);
    } catch {
      return undefined;
    }
  }
  return canonical;
}
