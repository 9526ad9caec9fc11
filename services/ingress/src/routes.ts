/** Where each public path goes, and what ingress must check before forwarding it. */
export type Backend = "inference" | "tools" | "jobs";

export interface RouteTarget {
  backend: Backend;
  /** Low-cardinality label for metrics and logs. */
  label: string;
  /** The tool a tools route needs permission for. */
  tool?: string;
}

const modelRoutes = [
  "/v1/chat/completions",
  "/v1/messages",
  "/v1/responses",
  "/v1/completions",
  "/v1/embeddings",
  "/v1/rerank",
  "/v1/images/generations",
  "/v1/audio/speech",
  "/v1/audio/transcriptions",
  "/v1/ocr",
];
const exact = new Map<string, RouteTarget>(modelRoutes.map((p) => [p, { backend: "inference", label: p }]));
exact.set("/v1/models", { backend: "inference", label: "/v1/models" });

export function resolveRoute(path: string): RouteTarget | undefined {
  const hit = exact.get(path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path);
  if (hit) return hit;
  if (path.startsWith("/v1/models/")) return { backend: "inference", label: "/v1/models/:model" };
  if (path.startsWith("/v1/async/")) return { backend: "jobs", label: "/v1/async" };
  const tool = /^\/v1\/tools\/([^/]+)\/(.+)$/.exec(path);
  if (tool) {
    const [, name, rest] = tool as unknown as [string, string, string];
    if (name === "webtool" && rest.startsWith("research")) {
      return { backend: "jobs", label: "/v1/tools/webtool/research", tool: name };
    }
    return { backend: "tools", label: `/v1/tools/${name}`, tool: name };
  }
  return undefined;
}

const modelRouteSet = new Set(modelRoutes);

/**
 * Whether a call counts against the rate limits, and which model route's token estimate applies to
 * it. Reads (the model list, job polls) are free; creating a job counts like the call it wraps.
 */
export function rateLimitFor(target: RouteTarget, method: string, path: string): { tokenRoute?: string } | undefined {
  if (target.label.startsWith("/v1/models")) return undefined;
  if (target.backend === "jobs") {
    if (method !== "POST") return undefined;
    const inner = path.replace(/^\/v1\/async\//, "/v1/").replace(/\/$/, "");
    return modelRouteSet.has(inner) ? { tokenRoute: inner } : {};
  }
  return target.backend === "inference" ? { tokenRoute: target.label } : {};
}
