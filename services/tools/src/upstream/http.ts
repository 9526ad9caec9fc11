import { Agent, request, type Dispatcher } from "undici";

/**
 * One pooled keep-alive HTTP client for every tool upstream, created once per service (undici keeps
 * a pool per origin inside it). The same settings as inference's: services share no code files.
 */
export function createUpstreamAgent(): Agent {
  return new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
    connections: null,
    pipelining: 1,
    connect: { timeout: 10_000 },
  });
}

export interface UpstreamRequest {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  /** Time allowed until the response headers arrive; also the longest silence inside the body. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export function sendUpstream(agent: Dispatcher, req: UpstreamRequest): Promise<Dispatcher.ResponseData> {
  return request(req.url, {
    method: req.method,
    headers: req.headers,
    body: req.body,
    dispatcher: agent,
    signal: req.signal,
    headersTimeout: req.timeoutMs,
    bodyTimeout: req.timeoutMs,
  });
}

/** Reads at most `limit` bytes of a body; a huge error page is not worth more. */
export async function readBounded(body: Dispatcher.ResponseData["body"], limit = 64 * 1024): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    parts.push(buf);
    size += buf.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(parts).toString("utf8").slice(0, limit);
}

/** `${base}${path}` without a doubled slash. */
export function upstreamUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, "")}${path}`;
}
