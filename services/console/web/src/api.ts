/**
 * The console's JSON API (docs/console.md): same-origin calls under /console/api, the session's CSRF
 * token on every call that changes something, and errors in the OpenAI envelope turned into ApiError.
 */
export const API = "/console/api";
export const BASE = "/console";

let csrfToken: string | undefined;

/** Set from the session: sent in `x-csrf-token` on every state-changing call. */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    /** Seconds, from `retry-after` (on 429). */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

type Query = Record<string, string | number | undefined | null>;

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/** A path under /console/api/workspaces/{ws}. */
export function wsPath(ws: string, rest = ""): string {
  return `/workspaces/${encodeURIComponent(ws)}${rest}`;
}

async function errorOf(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText || "error"}`;
  let code: string | null = null;
  let param: string | null = null;
  try {
    const body = (await res.json()) as { error?: { message?: unknown; code?: unknown; type?: unknown; param?: unknown } };
    if (body?.error) {
      if (typeof body.error.message === "string" && body.error.message) message = body.error.message;
      code = typeof body.error.code === "string" ? body.error.code : typeof body.error.type === "string" ? body.error.type : null;
      param = typeof body.error.param === "string" ? body.error.param : null;
    }
  } catch {
    // Not JSON (a proxy's page): the status says it.
  }
  const retry = res.headers.get("retry-after");
  const seconds = retry === null ? null : Number.isFinite(Number(retry)) ? Math.max(0, Math.ceil(Number(retry))) : secondsUntil(retry);
  return new ApiError(res.status, message, code, param, seconds);
}

function secondsUntil(date: string): number | null {
  const at = Date.parse(date);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Every read in flight, so that signing out can drop them (abortReads). */
let reads = new AbortController();

/**
 * Drops the reads in flight; later reads go ahead. Signing out calls it first: a read the server
 * answered after the session ended would be a 401 for a page already gone (the browser logs it).
 */
export function abortReads(): void {
  reads.abort();
  reads = new AbortController();
}

export async function api<T>(method: string, path: string, body?: unknown, query?: Query): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const read = method === "GET" || method === "HEAD";
  if (!read && csrfToken) headers["x-csrf-token"] = csrfToken;
  const signal = read ? reads.signal : undefined;
  let res: Response;
  try {
    res = await fetch(withQuery(`${API}${path}`, query), {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ApiError(0, "The console could not be reached; check your connection and try again");
  }
  if (!res.ok) throw await errorOf(res);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(path: string, query?: Query) => api<T>("GET", path, undefined, query);
export const post = <T>(path: string, body?: unknown) => api<T>("POST", path, body ?? {});
export const patch = <T>(path: string, body: unknown) => api<T>("PATCH", path, body);
export const put = <T>(path: string, body: unknown) => api<T>("PUT", path, body);
export const del = <T>(path: string) => api<T>("DELETE", path);

/** A list answer: `{object: "list", data}` (or a bare array). */
export function listOf<T>(answer: { data: T[] } | T[] | undefined): T[] {
  if (!answer) return [];
  return Array.isArray(answer) ? answer : (answer.data ?? []);
}

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 429 && error.retryAfter !== null) {
      return `${error.message.replace(/\.?$/, ".")} Try again in ${error.retryAfter} second${error.retryAfter === 1 ? "" : "s"}.`;
    }
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * Where to go back to after signing in: only a same-origin path under /console/ (never the API,
 * never another site), else the console's start.
 */
export function safeReturnPath(value: string | null | undefined): string {
  if (!value) return `${BASE}/`;
  try {
    if (!value.startsWith("/") || value.startsWith("//") || value.includes("\\")) return `${BASE}/`;
    const url = new URL(value, window.location.origin);
    if (url.origin !== window.location.origin) return `${BASE}/`;
    if (!url.pathname.startsWith(`${BASE}/`) || url.pathname.startsWith(`${API}/`) || url.pathname === `${API}`) return `${BASE}/`;
    if (url.pathname.startsWith(`${BASE}/sign-in`) || url.pathname.startsWith(`${BASE}/invite`)) return `${BASE}/`;
    return `${url.pathname}${url.search}`;
  } catch {
    return `${BASE}/`;
  }
}

/** A /console/… path as the router (basename /console) names it. */
export function routerPath(full: string): string {
  return full.startsWith(`${BASE}/`) ? full.slice(BASE.length) : "/";
}
