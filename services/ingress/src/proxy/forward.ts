import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { Url } from "node:url";
import type { Request, RequestHandler, Response } from "express";
import { createProxyMiddleware, proxyEventsPlugin, type Plugin } from "http-proxy-middleware";
import { internalHeaderPrefix, internalHeaders, outcomeTokens, type TokenTicket } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { IdentitySigner, sendError } from "@gw/service-kit";
import { traceHeaders } from "@gw/telemetry";
import type { CredentialRelay } from "../credentials/credential-relay";
import { captureRetention } from "../logs/body-capture";
import type { Backend } from "../routes";

export type BackendUrls = Record<Backend, string>;

/**
 * One proxy per backend over a keep-alive agent. The body ingress already read is written as-is
 * (never re-serialised); the caller's key and any client-supplied internal header are dropped, and
 * the signed identity is added. Responses, SSE included, are piped through without buffering.
 */
export function createForwarders(
  urls: BackendUrls,
  internalSecret: string,
  credentials?: CredentialRelay,
  onAnswer?: (proxyRes: IncomingMessage, res: Response) => void,
): Record<Backend, RequestHandler> {
  const signer = new IdentitySigner(internalSecret);
  const make = (backend: Backend): RequestHandler => {
    const agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024, scheduling: "lifo" });
    return createProxyMiddleware<Request, Response>({
      target: parsedTarget(urls[backend]),
      agent,
      changeOrigin: false,
      xfwd: false,
      // Only the plugin that registers `on` below. The defaults add, for every request, a log line
      // built from two URL objects (for a no-op logger), a 'close' and an 'error' listener that only
      // print debug output, and an error page that `on.error` replaces anyway.
      ejectPlugins: true,
      plugins: [proxyEventsPlugin as unknown as Plugin<Request, Response>],
      on: {
        proxyReq: (proxyReq, req, res) => prepareUpstreamRequest(proxyReq, req as Request, res as Response, signer, credentials),
        proxyRes: (proxyRes, _req, res) => {
          takeUsage(proxyRes, res as Response);
          relayAbort(proxyRes, res);
          onAnswer?.(proxyRes, res as Response);
        },
        error: (err, req, res) => onProxyError(err, req as Request, res as Response | import("node:net").Socket, backend),
      },
    }) as RequestHandler;
  };
  return { inference: make("inference"), tools: make("tools"), jobs: make("jobs") };
}

/**
 * The backend's address in the shape http-proxy works with. Given as a string, it is parsed again
 * with the legacy `url.parse` for every request, a cost that showed in ingress's profile.
 */
export function parsedTarget(address: string): Partial<Url> {
  const url = new URL(address);
  const path = url.pathname + url.search;
  // WHATWG keeps an IPv6 literal's brackets; a socket's host name must not have them.
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return { protocol: url.protocol, host: url.host, hostname, port: url.port, pathname: url.pathname, path, search: url.search };
}

/**
 * The caller's key, and the hop-by-hop headers of the caller's connection: they describe that
 * connection, not the pooled one to the service (a caller's `connection: close` made the service
 * close a keep-alive socket the agent then handed to the next request).
 */
const dropped = new Set(["authorization", "x-api-key", "connection", "keep-alive", "proxy-connection", "te", "upgrade"]);

function prepareUpstreamRequest(proxyReq: ClientRequest, req: Request, res: Response, signer: IdentitySigner, credentials?: CredentialRelay): void {
  for (const name of proxyReq.getHeaderNames()) {
    if (name.startsWith(internalHeaderPrefix) || dropped.has(name)) proxyReq.removeHeader(name);
  }
  const identity = res.locals.identity;
  if (identity) proxyReq.setHeader(internalHeaders.identity, signer.sign(identity));
  const principal = res.locals.principal;
  const sealed = principal && credentials?.headerFor(principal);
  if (sealed) proxyReq.setHeader(internalHeaders.credentials, sealed);
  proxyReq.setHeader(internalHeaders.requestId, res.locals.requestId);
  // With tracing on, the service continues this request's span rather than the caller's; with it
  // off, the caller's traceparent goes on as it came.
  const traceContext = res.locals.traceContext;
  if (traceContext) {
    proxyReq.removeHeader("tracestate");
    for (const [name, value] of Object.entries(traceHeaders(traceContext))) proxyReq.setHeader(name, value);
  }
  const ticket = res.locals.tokenTicket as TokenTicket | undefined;
  if (ticket) proxyReq.setHeader(internalHeaders.tokenTicket, JSON.stringify(ticket));
  const captureDays = principal && res.locals.target?.backend === "jobs" ? captureRetention(principal) : undefined;
  if (captureDays !== undefined) proxyReq.setHeader(internalHeaders.captureDays, String(captureDays));
  const body = req.body;
  if (Buffer.isBuffer(body)) {
    // The body was read (and decoded, if it came compressed) at the door: it goes on as plain bytes.
    proxyReq.setHeader("content-length", body.length);
    proxyReq.removeHeader("transfer-encoding");
    proxyReq.removeHeader("content-encoding");
    proxyReq.write(body);
  }
  // The request body was fully read, so Node never emits "aborted" on it: watch the response
  // instead, and cancel the hop (and so the upstream call behind it) when the client goes away.
  res.once("close", () => {
    if (!res.writableFinished) proxyReq.destroy();
  });
}

/**
 * Reads the usage the backend reports (a header on JSON answers, a trailer on streams) and removes
 * every internal header, and the trailer announcement, before the answer reaches the client.
 */
function takeUsage(proxyRes: IncomingMessage, res: Response): void {
  const name = internalHeaders.usageTokens;
  const headers = proxyRes.headers;
  recordUsage(res, headers[name]);
  takeOutcome(res, headers[internalHeaders.outcome]);
  const errorType = headers[internalHeaders.errorType];
  if (typeof errorType === "string") res.locals.backendErrorType = errorType;
  if (headers[internalHeaders.recordDeferred] !== undefined) res.locals.recordDeferred = true;
  if (headers.trailer?.toLowerCase().includes(name)) {
    // Trailers are parsed by the time the body ends; this runs before the pipe ends the answer.
    proxyRes.once("end", () => takeTrailers(proxyRes, res));
    headers.trailer = undefined;
  }
  // Set to undefined, which the proxy's header copy skips, rather than deleted: a delete turns the
  // headers object into a dictionary, slower for every read and the copy after it, on every answer
  // (the outcome header is on all of them).
  for (const header of Object.keys(headers)) {
    if (header.startsWith(internalHeaderPrefix)) headers[header] = undefined;
  }
}

// Module-level helpers rather than closures made per request: the services run through tsx, whose
// esbuild output wraps every named closure in a `__name` call (an Object.defineProperty) each time
// it is created.
function takeTrailers(proxyRes: IncomingMessage, res: Response): void {
  recordUsage(res, proxyRes.trailers[internalHeaders.usageTokens]);
  takeOutcome(res, proxyRes.trailers[internalHeaders.outcome]);
}

/** Kept as text: it is parsed once, when the usage record is made after the answer. */
function takeOutcome(res: Response, value: string | string[] | undefined): void {
  if (typeof value === "string") res.locals.outcomeText = value;
}

/**
 * The tokens the backend reported for the token limits: its usage header or trailer when it sent
 * one, else the total in its outcome (inference puts it there, one header fewer on every answer).
 * Read when the answer has ended, and only where a token reservation waits on it.
 */
export function usageTokensOf(res: Response): number | undefined {
  return res.locals.usageTokens ?? outcomeTokens(res.locals.outcomeText);
}

function recordUsage(res: Response, value: string | string[] | undefined): void {
  const n = Number(Array.isArray(value) ? value[0] : value);
  if (value !== undefined && Number.isFinite(n) && n >= 0) res.locals.usageTokens = n;
}

function relayAbort(proxyRes: IncomingMessage, res: ServerResponse): void {
  proxyRes.once("aborted", () => cutShort(res));
  proxyRes.once("error", () => cutShort(res));
}

function cutShort(res: ServerResponse): void {
  if (!res.writableFinished) res.destroy();
}

function onProxyError(err: Error, req: Request, res: Response | import("node:net").Socket, backend: Backend): void {
  if (!("setHeader" in res)) {
    res.destroy();
    return;
  }
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const code = (err as NodeJS.ErrnoException).code;
  res.locals.log?.warn({ backend, code, err: err.message }, "backend call failed");
  const error =
    code === "ECONNREFUSED" || code === "ENOTFOUND"
      ? new GatewayError("upstream_unavailable", `The ${backend} service is unavailable; try again`)
      : new GatewayError("upstream_error", `The ${backend} service failed to answer; try again`);
  sendError(res, error, req.path);
}
