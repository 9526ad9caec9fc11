import express, { type ErrorRequestHandler, type Express, type Request, type RequestHandler, type Response } from "express";
import { internalHeaders, type ErrorFormat, type Identity } from "@gw/contracts";
import { GatewayError, fromZodError } from "@gw/errors";
import { requestLogger, type Logger } from "@gw/logger";
import { startHttpServerSpan, tracingEnabled, type TraceContext } from "@gw/telemetry";
import { ZodError } from "zod";
import { newRequestId } from "./request-id";
import type { ServiceMetrics } from "./metrics";

declare global {
  // Express's own extension point for per-response values; typed once here for every service.
  // biome-ignore lint/suspicious/noRedeclare: declaration merging is how Express lets its Locals be typed.
  namespace Express {
    interface Locals {
      requestId: string;
      log: Logger;
      /** Low-cardinality route label for metrics, set by the route. */
      route?: string;
      identity?: Identity;
      /** An enterprise workspace's own provider credentials for this call, by provider name. */
      credentials?: Record<string, string>;
      /** The error envelope's type, once an error answer was sent (for the usage record). */
      errorType?: string;
      /** This request's trace context (its server span), set only while tracing is enabled. */
      traceContext?: TraceContext;
    }
  }
}

const safeRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/** Probes and scrapes: a trace each every few seconds would bury the requests' traces. */
const untracedPaths = new Set(["/livez", "/readyz", "/metrics"]);

export interface ServiceAppOptions {
  logger: Logger;
  metrics: ServiceMetrics;
  /** Accept the caller's x-request-id (internal services, behind ingress) or always mint one. */
  trustRequestId: boolean;
  /**
   * Called once per request when its response closes (complete or not), with how long it took and
   * when it started (`process.hrtime.bigint()`), from the listener the app keeps anyway: a second
   * "close" listener per request costs measurably.
   */
  onClose?: (req: Request, res: Response, durationMs: number, startedAt: bigint) => void;
}

/** Express with the gateway's common edge: request id, per-request logger, metrics. */
export function createServiceApp(options: ServiceAppOptions): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(requestContext(options));
  return app;
}

function requestContext({ logger, metrics, trustRequestId, onClose }: ServiceAppOptions): RequestHandler {
  return (req, res, next) => {
    const given = req.headers["x-request-id"];
    const requestId = trustRequestId && typeof given === "string" && safeRequestId.test(given) ? given : newRequestId();
    res.locals.requestId = requestId;
    res.locals.log = requestLogger(logger, requestId);
    res.setHeader("x-request-id", requestId);
    const started = process.hrtime.bigint();
    // A SERVER span per request, continuing the caller's traceparent; none at all with tracing off.
    const span = tracingEnabled() && !untracedPaths.has(req.path) ? startHttpServerSpan(req, requestId) : undefined;
    if (span) res.locals.traceContext = span.context;
    res.once("close", () => {
      const route = res.locals.route ?? req.route?.path;
      const labels = { route: String(route ?? "unmatched"), method: req.method, status: String(res.statusCode) };
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      metrics.requests.inc(labels);
      metrics.latency.observe(labels, durationMs / 1000);
      span?.end(res.statusCode, route === undefined ? undefined : String(route));
      onClose?.(req, res, durationMs, started);
    });
    if (span) span.run(req, next);
    else next();
  };
}

/** Sets the metrics route label; mount before a route's handlers. */
export function routeLabel(label: string): RequestHandler {
  return (_req, res, next) => {
    res.locals.route = label;
    next();
  };
}

/** /v1/messages answers in the Anthropic envelope; every other route in OpenAI's. */
export function errorFormatFor(path: string): ErrorFormat {
  return /^\/v1\/(async\/)?messages(\/|$|\?)/.test(path) ? "anthropic" : "openai";
}

/**
 * Set on an internal service's app: its error answers name their type in a header as well, which
 * ingress reads into the usage record (and removes, as every `x-gw-*` header) without parsing bodies.
 */
export const REPORTS_ERROR_TYPE = "reportsErrorType";

export function sendError(res: express.Response, error: GatewayError, path: string): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  const format = errorFormatFor(path);
  const envelope = error.toEnvelope(format, res.locals.requestId);
  res.locals.errorType = envelope.error.type;
  if (res.app.locals[REPORTS_ERROR_TYPE] === true) res.setHeader(internalHeaders.errorType, envelope.error.type);
  res.status(error.status).json(envelope);
}

/** Maps anything thrown to a GatewayError; unknown errors become a 500 with no internals. */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof ZodError) return fromZodError(err);
  // The router could not decode a path parameter (`%C0%AF`): no resource has such a name.
  if (err instanceof URIError) return new GatewayError("not_found", "No such resource: the path holds malformed percent-encoding");
  if (typeof err !== "object" || err === null) {
    return new GatewayError("internal_error", "Internal server error", { cause: err });
  }
  const bodyError = err as { type?: string; status?: number; limit?: number; expose?: boolean; message?: string };
  switch (bodyError.type) {
    case "entity.parse.failed":
      return new GatewayError("invalid_request", "Invalid body: not valid JSON");
    case "entity.shape":
      return new GatewayError("invalid_request", bodyError.message ?? "Invalid body: JSON past the gateway's bounds");
    case "entity.too.large":
      return new GatewayError("body_too_large", `Request body is larger than the limit of ${bodyError.limit ?? "?"} bytes`);
    case "encoding.unsupported":
    case "charset.unsupported":
      return new GatewayError("unsupported_media_type", "Unsupported body encoding or charset");
    case "request.aborted":
      return new GatewayError("invalid_request", "Request body was aborted by the client");
  }
  // Any other client-side failure body-parser reports (size mismatch, …) stays a 4xx.
  if (bodyError.expose === true && typeof bodyError.status === "number" && bodyError.status >= 400 && bodyError.status < 500) {
    return new GatewayError("invalid_request", `Invalid body: ${bodyError.message ?? "rejected"}`, { status: bodyError.status });
  }
  if (unstorableText(err)) {
    return new GatewayError("invalid_request", "Invalid request: a value contains U+0000 (NUL), which cannot be stored or looked up", { cause: err });
  }
  return new GatewayError("internal_error", "Internal server error", { cause: err });
}

/**
 * Postgres's answer to a text value it cannot hold: U+0000 in any text parameter (SQLSTATE 22021,
 * character_not_in_repertoire; 22P05 where the server's encoding lacks a character). Only a caller's
 * value brings one, so it is the caller's error, found by the database rather than by a check of
 * every string of every request; pg and PGlite both carry the code, possibly under a wrapper's cause.
 */
function unstorableText(err: object): boolean {
  let at: unknown = err;
  for (let depth = 0; depth < 3 && typeof at === "object" && at !== null; depth++) {
    const code = (at as { code?: unknown }).code;
    if (code === "22021" || code === "22P05") return true;
    at = (at as { cause?: unknown }).cause;
  }
  return false;
}

/** The last two handlers of every app: a 404 in the route's envelope, then the error edge. */
export function finishApp(app: Express): void {
  app.use((req, res) => {
    sendError(res, new GatewayError("not_found", `Unknown route: ${req.method} ${req.path}`), req.path);
  });
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    const error = toGatewayError(err);
    if (error.status >= 500) res.locals.log.error({ err: error.cause ?? err, code: error.code }, "request failed");
    else res.locals.log.debug({ code: error.code, message: error.message }, "request rejected");
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, error, req.path);
  };
  app.use(onError);
}
