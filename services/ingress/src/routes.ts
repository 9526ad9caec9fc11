/**
 * The public route table: every path ingress serves, its method, where it goes, what body it takes
 * and how it is charged. A request is matched here before anything is read or looked up, so a path or
 * a method the table does not know costs a 404 or 405 and nothing else, and every label a metric
 * carries comes from this table, never from what the caller typed.
 */
export type Backend = "inference" | "tools" | "jobs";
/** What a route's body must be: JSON, a multipart form, or nothing at all. */
export type BodyKind = "json" | "multipart" | "none";

export type Method = "GET" | "POST" | "DELETE";

export interface RouteTarget {
  backend: Backend;
  method: Method;
  /** Low-cardinality label for metrics and logs. */
  label: string;
  body: BodyKind;
  /** The largest body the route takes, before the operator's overall limit (GATEWAY_BODY_LIMIT_MB). */
  maxBodyBytes: number;
  /** The tool a tools route needs permission for. */
  tool?: "webtool" | "serptool";
  /**
   * Whether the call counts against the rate limits (reads are free) and which model route's token
   * estimate applies to it: creating a job counts like the call it wraps. One with neither a token
   * route nor a tool (an upload, a batch) counts as a request and is not priced.
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

/** A path's targets, one per method, and its 405 naming them all (both made once, here). */
interface PathRoutes {
  GET?: RouteMatch;
  POST?: RouteMatch;
  DELETE?: RouteMatch;
  notAllowed: RouteMatch;
  targets: RouteTarget[];
}

const methods: readonly Method[] = ["GET", "POST", "DELETE"];

function pathRoutes(...targets: RouteTarget[]): PathRoutes {
  const allow = methods.filter((method) => targets.some((target) => target.method === method)).join(", ");
  const routes: PathRoutes = { notAllowed: { error: "method_not_allowed", allow }, targets };
  for (const target of targets) {
    if (routes[target.method]) throw new Error(`two routes for one path take ${target.method}`);
    routes[target.method] = { target };
  }
  return routes;
}

const exact = new Map<string, PathRoutes>();
const add = (path: string, ...targets: RouteTarget[]) => exact.set(path, pathRoutes(...targets));
for (const [name, body] of Object.entries(modelRoutes)) {
  const path = `/v1/${name}`;
  add(path, { backend: "inference", method: "POST", label: path, ...body, charge: { tokenRoute: path } });
  add(`/v1/async/${name}`, { backend: "jobs", method: "POST", label: "/v1/async", ...body, charge: { tokenRoute: path } });
}
add("/v1/models", { backend: "inference", method: "GET", label: "/v1/models", body: "none", maxBodyBytes: 0 });
for (const operation of webtoolOperations) {
  const path = `/v1/tools/webtool/${operation}`;
  add(path, { backend: "tools", method: "POST", label: "/v1/tools/webtool", body: "json", maxBodyBytes: TOOL_BODY_BYTES, tool: "webtool", charge: {} });
}
add("/v1/tools/webtool/research", {
  backend: "jobs",
  method: "POST",
  label: "/v1/tools/webtool/research",
  body: "json",
  maxBodyBytes: TOOL_BODY_BYTES,
  tool: "webtool",
  charge: {},
});
add("/v1/tools/serptool/search", {
  backend: "tools",
  method: "GET",
  label: "/v1/tools/serptool",
  body: "none",
  maxBodyBytes: 0,
  tool: "serptool",
  charge: {},
});

/**
 * OpenAI's Files and Batch APIs, served by jobs. An upload takes OpenAI's batch file limit (200 MB);
 * creating a file or a batch counts as a request, while the batch's lines are charged as they run.
 */
const jobsNoBody = (method: Method, label: string): RouteTarget => ({ backend: "jobs", method, label, body: "none", maxBodyBytes: 0 });
add("/v1/files", { ...jobsNoBody("POST", "/v1/files"), body: "multipart", maxBodyBytes: 200 * MiB, charge: {} }, jobsNoBody("GET", "/v1/files"));
add("/v1/batches", { ...jobsNoBody("POST", "/v1/batches"), body: "json", maxBodyBytes: 1 * MiB, charge: {} }, jobsNoBody("GET", "/v1/batches"));

const modelRead: RouteTarget = { backend: "inference", method: "GET", label: "/v1/models/:model", body: "none", maxBodyBytes: 0 };
const jobRead: RouteTarget = { backend: "jobs", method: "GET", label: "/v1/async", body: "none", maxBodyBytes: 0 };
const researchRead: RouteTarget = { ...jobRead, label: "/v1/tools/webtool/research", tool: "webtool" };
const modelReads = pathRoutes(modelRead);
const jobReads = pathRoutes(jobRead);
const researchReads = pathRoutes(researchRead);

/** A file's and a batch's routes: each label is the path's template. Cancelling is free, as reads are. */
const fileRoutes = pathRoutes(jobsNoBody("GET", "/v1/files/{file_id}"), jobsNoBody("DELETE", "/v1/files/{file_id}"));
const fileContentRoutes = pathRoutes(jobsNoBody("GET", "/v1/files/{file_id}/content"));
const batchRoutes = pathRoutes(jobsNoBody("GET", "/v1/batches/{batch_id}"));
const batchCancelRoutes = pathRoutes(jobsNoBody("POST", "/v1/batches/{batch_id}/cancel"));
const idRoutes = [fileRoutes, fileContentRoutes, batchRoutes, batchCancelRoutes];
/** The template of each target whose path has an id in one fixed place. */
const templated = new Map<RouteTarget, string>([[modelRead, "/v1/models/{model}"]]);
for (const routes of idRoutes) for (const target of routes.targets) templated.set(target, target.label);

/**
 * Every route as a path template (`{model}`, `{job_id}`, `{file_id}`, `{batch_id}` where the table
 * matches an id) with its target, one entry per method: what the API reference must document, no
 * more and no less (its test holds it to this).
 */
export function publicRoutes(): { path: string; target: RouteTarget }[] {
  const entries = (path: string, routes: PathRoutes) => routes.targets.map((target) => ({ path, target }));
  return [
    ...[...exact].flatMap(([path, routes]) => entries(path, routes)),
    ...entries("/v1/models/{model}", modelReads),
    ...Object.keys(modelRoutes).flatMap((name) => entries(`/v1/async/${name}/{job_id}`, jobReads)),
    ...entries("/v1/tools/webtool/research/{job_id}", researchReads),
    ...idRoutes.flatMap((routes) => entries(routes.targets[0]!.label, routes)),
  ];
}

/**
 * The route a usage record names: the path itself for a route the table knows exactly, the template
 * for one with an id in it (`/v1/async/chat/completions/{job_id}`, `/v1/files/{file_id}/content`),
 * so the ledger's route column holds as few values as the table has routes.
 */
export function ledgerRouteOf(path: string, target: RouteTarget): string {
  if (exact.has(path)) return path;
  const template = templated.get(target);
  if (template !== undefined) return template;
  return `${path.slice(0, path.lastIndexOf("/"))}/{job_id}`;
}

/** Our job ids are `job_` and 32 hex digits; anything else cannot name a job and goes no further. */
const JOB_ID = /^job_[A-Za-z0-9]{1,64}$/;
/** A file or batch in OpenAI's form (`file-…`, `batch_…`), alone or with its one sub-resource. */
const FILE_PATH = /^\/v1\/files\/file-[A-Za-z0-9]{1,64}(?:\/content)?$/;
const BATCH_PATH = /^\/v1\/batches\/batch_[A-Za-z0-9]{1,64}(?:\/cancel)?$/;
const NOT_FOUND: RouteMatch = { error: "not_found" };

/** Matches a normalised path (see normalisePath) and a method against the table. */
export function resolveRoute(path: string, method: string): RouteMatch {
  const routes = exact.get(path) ?? routesWithId(path);
  if (!routes) return NOT_FOUND;
  switch (method) {
    case "GET":
    case "HEAD":
      return routes.GET ?? routes.notAllowed;
    case "POST":
      return routes.POST ?? routes.notAllowed;
    case "DELETE":
      return routes.DELETE ?? routes.notAllowed;
    default:
      return routes.notAllowed;
  }
}

function routesWithId(path: string): PathRoutes | undefined {
  if (path.startsWith("/v1/models/")) return modelReads;
  if (path.startsWith("/v1/files/")) return FILE_PATH.test(path) ? (path.endsWith("/content") ? fileContentRoutes : fileRoutes) : undefined;
  if (path.startsWith("/v1/batches/")) return BATCH_PATH.test(path) ? (path.endsWith("/cancel") ? batchCancelRoutes : batchRoutes) : undefined;
  const slash = path.lastIndexOf("/");
  const id = path.slice(slash + 1);
  if (!JOB_ID.test(id)) return undefined;
  const parent = path.slice(0, slash);
  if (parent === "/v1/tools/webtool/research") return researchReads;
  return parent.startsWith("/v1/async/") && Object.hasOwn(modelRoutes, parent.slice("/v1/async/".length)) ? jobReads : undefined;
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
