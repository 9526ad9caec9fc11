import type { Express, Request, RequestHandler, Response } from "express";
import { internalHeaderPrefix, type TokenTicket } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import {
  allowedByAll,
  createServiceApp,
  finishApp,
  jsonShapeProblem,
  type Health,
  type ServiceAppOptions,
  type ServiceMetrics,
  type UsagePublisher,
} from "@gw/service-kit";
import type { Authenticator } from "./auth/authenticator";
import type { BodyBudget } from "./body/body-budget";
import type { BudgetAsk, BudgetEnd, BudgetGate } from "./budgets/budget-gate";
import type { BodyCapture } from "./logs/body-capture";
import { bodyRule, hasBody } from "./body/body-rules";
import { discardRestOfBody } from "./body/discard-body";
import { readRequestBody } from "./body/read-body";
import type { CredentialRelay } from "./credentials/credential-relay";
import { mountApiDocs } from "./docs/api-docs";
import { estimateTokenParts, estimateUploadTokens } from "./limits/estimate";
import { rateLimitError, setRateHeaders, type RateLimitGate } from "./limits/rate-limit-gate";
import type { BackendUrls } from "./proxy/forward";
import { createForwarders, usageTokensOf } from "./proxy/forward";
import { consoleProxy } from "./proxy/console-proxy";
import { normalisePath, resolveRoute, type RouteTarget } from "./routes";
import { usageRecorder } from "./usage/usage-recorder";
import type { KeyPrincipal } from "./store/identity-store";

declare global {
  // biome-ignore lint/suspicious/noRedeclare: declaration merging is how Express lets its Locals be typed.
  namespace Express {
    interface Locals {
      target?: RouteTarget;
      principal?: KeyPrincipal;
      /** The request body, parsed once here when it is JSON. */
      json?: unknown;
      /** Total tokens the backend reported in its usage header or trailer (usageTokensOf also reads its outcome), for settling the reservation. */
      usageTokens?: number;
    }
  }
}

export interface PublicAppDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  health: Health;
  authenticator: Authenticator;
  backends: BackendUrls;
  internalSecret: string;
  /** The operator's bound on any one body (GATEWAY_BODY_LIMIT_MB); each route has its own below it. */
  bodyLimitBytes: number;
  /** Bounds the bytes of bodies this process holds at once. */
  bodyBudget: BodyBudget;
  rateLimits: RateLimitGate;
  /** Monthly budgets; unset, none are enforced. */
  budgets?: BudgetGate;
  /** Detailed logs (request and answer bodies of Enterprise workspaces that turn them on); unset, none are kept. */
  bodyCapture?: BodyCapture;
  rateWindowMs: number;
  credentials: CredentialRelay;
  /** Express's `trust proxy`: which proxies' X-Forwarded-For to believe for the client's address. */
  trustProxy?: boolean | number | string;
  /** Takes one usage record per request that reached a workspace. */
  usage: UsagePublisher;
  /** The console service (CONSOLE_URL): `/console/*` goes there, before any key is asked for. */
  consoleUrl?: string;
}

/** Longest public model name: matching it against allow-list globs is then bounded too. */
const MAX_MODEL_NAME = 256;

/**
 * The public port, in the order that makes a hostile request cheap: health; then the route table
 * (an unknown path or method is refused before anything is read); the key (header only); the
 * body's type and size, checked before a byte of it is read; only then the body, its JSON checked
 * and the model's access; the rate limits; the proxy to the owning service.
 */
export function createPublicApp(deps: PublicAppDeps): Express {
  const recordUsage = usageRecorder(deps.usage);
  const capture = deps.bodyCapture;
  const onClose: ServiceAppOptions["onClose"] = capture
    ? (req, res, durationMs, startedAt) => {
        recordUsage(req, res, durationMs, startedAt);
        capture.onClose(req, res, durationMs);
      }
    : recordUsage;
  const app = createServiceApp({ logger: deps.logger, metrics: deps.metrics, trustRequestId: false, onClose });
  if (deps.trustProxy !== undefined) app.set("trust proxy", deps.trustProxy);
  deps.health.mount(app);
  mountApiDocs(app);
  const forwarders = createForwarders(deps.backends, deps.internalSecret, deps.credentials, capture && ((proxyRes, res) => capture.tee(proxyRes, res)));
  if (deps.consoleUrl) app.use(consoleProxy({ url: deps.consoleUrl }));
  app.use(door(deps.authenticator));
  app.use(readBody(deps.bodyLimitBytes, deps.bodyBudget));
  app.use(checkJson);
  app.use(limitRate(deps.rateLimits, deps.rateWindowMs, deps.budgets));
  app.use((req, res, next) => forwarders[res.locals.target!.backend](req, res, next));
  finishApp(app);
  return app;
}

/**
 * Everything decided from the request line and headers alone: the route, the key, the tool, the
 * body's content type. A refusal here has read no body, and what arrives of it is thrown away
 * (see discardRestOfBody), never held.
 */
function door(authenticator: Authenticator): RequestHandler {
  return async (req, res, next) => {
    try {
      const path = normalisePath(req.path);
      const match = path === undefined ? ({ error: "not_found" } as const) : resolveRoute(path, req.method);
      if ("error" in match) {
        if (match.error === "method_not_allowed") {
          res.setHeader("allow", match.allow);
          throw new GatewayError("method_not_allowed", `${req.method} is not allowed on ${path}: it takes ${match.allow}`);
        }
        throw new GatewayError("not_found", `Unknown route: ${req.method} ${path ?? "(malformed path)"}`);
      }
      const { target } = match;
      res.locals.route = target.label;
      // The canonical path is the only one the services see.
      if (path !== req.path) req.url = path + queryOf(req.url);
      for (const name of Object.keys(req.headers)) {
        if (name.startsWith(internalHeaderPrefix)) delete req.headers[name];
      }
      // Ingress answers a client's 100-continue itself and forwards the whole body.
      delete req.headers.expect;
      const { identity, principal } = await authenticator.authenticate(req.headers, req.ip ?? req.socket.remoteAddress ?? "");
      res.locals.identity = identity;
      res.locals.principal = principal;
      if (target.tool && !identity.tools.includes(target.tool)) {
        throw new GatewayError("tool_not_allowed", `The tool \`${target.tool}\` is not enabled for this key`);
      }
      bodyRule(req, target);
      res.locals.target = target;
      next();
    } catch (err) {
      discardRestOfBody(req, res);
      throw err;
    }
  };
}

function queryOf(url: string): string {
  const at = url.indexOf("?");
  return at < 0 ? "" : url.slice(at);
}

/** The body, read only now that the route, the key and the body's type are known to be acceptable. */
function readBody(overallLimit: number, budget: BodyBudget): RequestHandler {
  return async (req, res, next) => {
    const target = res.locals.target!;
    if (target.body === "none" || !hasBody(req)) return next();
    try {
      req.body = await readRequestBody(req, res, Math.min(target.maxBodyBytes, overallLimit), budget);
    } catch (err) {
      discardRestOfBody(req, res);
      throw err;
    }
    next();
  };
}

/**
 * A JSON body is checked for its nesting depth and its members and items (before it is parsed, so a
 * hostile one never becomes a structure), parsed once, and its `model`, if any, checked against the
 * caller's allow-lists: a model outside them is a 403 before any hop. The raw bytes are forwarded
 * unchanged.
 */
function checkJson(req: Request, res: Response, next: () => void): void {
  const body: unknown = req.body;
  if (res.locals.target!.body !== "json" || !Buffer.isBuffer(body) || body.length === 0) return next();
  const problem = jsonShapeProblem(body);
  if (problem) throw new GatewayError("invalid_request", problem);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw new GatewayError("invalid_request", "Invalid body: not valid JSON");
  }
  res.locals.json = parsed;
  const model = typeof parsed === "object" && parsed !== null ? (parsed as { model?: unknown }).model : undefined;
  if (typeof model === "string") {
    if (model.length > MAX_MODEL_NAME) {
      throw new GatewayError("invalid_request", `Invalid body: model: at most ${MAX_MODEL_NAME} characters`, { param: "model" });
    }
    const identity = res.locals.identity;
    if (identity && !allowedByAll(identity.models, model)) {
      throw new GatewayError("model_not_allowed", `The model \`${model}\` is not available to this key`, { param: "model" });
    }
  }
  next();
}

/**
 * Checks and charges both scopes in one call to the limiter, sets the x-ratelimit-* headers, and
 * once the answer is complete settles the token reservation against what the backend reported: the
 * real usage when it said, nothing for a failed call, the estimate when the outcome is unknown (a
 * client that went away mid-stream may still have cost tokens upstream). A key or workspace with a
 * budget also holds a priced request's worst-case cost, asked in the same tick as the rate limit (one
 * write to Redis, one round trip for both), and settles it the same way.
 */
function limitRate(gate: RateLimitGate, windowMs: number, budgets: BudgetGate | undefined): RequestHandler {
  return async (req, res, next) => {
    const { target, principal } = res.locals;
    const charge = target!.charge;
    if (!charge || !principal) return next();
    const parts = charge.tokenRoute ? tokenPartsOf(charge.tokenRoute, target!, req, res) : undefined;
    const tokens = parts ? parts.input + parts.output : 0;
    const budget = priced(target!) && budgets?.applies(principal) ? settled(budgets.admit(principal, budgetAsk(req, res, target!, parts), res)) : undefined;
    let admission: Awaited<ReturnType<RateLimitGate["admit"]>>;
    try {
      admission = await gate.admit(principal, tokens);
    } catch (err) {
      const held = await budget;
      if (held?.ok && held.value) budgets!.settle(held.value, principal.workspace.id, principal.keyId, { kind: "failed" });
      throw err;
    }
    if (admission) setRateHeaders(res, admission.status);
    const held = await budget;
    if (held && !held.ok) {
      // Refused by a budget: a rate-limit charge made alongside gives its tokens back.
      if (admission?.allowed && tokens > 0) gate.settle(admission.ticket, 0);
      throw held.error;
    }
    const hold = held?.value;
    if (admission && !admission.allowed) {
      if (hold) budgets!.settle(hold, principal.workspace.id, principal.keyId, { kind: "failed" });
      throw rateLimitError(admission.denial, windowMs);
    }
    const ticket = admission && tokens > 0 ? admission.ticket : undefined;
    const toJobs = target!.backend === "jobs";
    // A job's usage is known only when it has run: the jobs service has both settled then.
    if (toJobs && (ticket || hold)) {
      res.locals.tokenTicket = {
        workspace_id: principal.workspace.id,
        key_id: principal.keyId,
        bucket: ticket?.bucket ?? 0,
        tokens: ticket?.tokens ?? 0,
        ...(hold ? { budget: hold } : {}),
      } satisfies TokenTicket;
    }
    if (res.closed) {
      // The caller left while it was being admitted (its close already past): nothing is sent on
      // for it, and what it was charged goes back.
      if (ticket) gate.settle(ticket, 0);
      if (hold) budgets!.settle(hold, principal.workspace.id, principal.keyId, { kind: "failed" });
      return;
    }
    if (ticket || hold) {
      res.once("close", () => {
        const used = usageTokensOf(res);
        if (ticket) {
          if (used !== undefined) gate.settle(ticket, used);
          else if (res.statusCode >= 400) gate.settle(ticket, 0);
        }
        // An accepted job settles when it has run; one refused settles now, as a failed call.
        if (hold && !(toJobs && res.statusCode < 400)) budgets!.settle(hold, principal.workspace.id, principal.keyId, budgetEndOf(res));
      });
    }
    next();
  };
}

/**
 * Whether the budgets price the call: a model call (by its tokens and units) or a tool's. Uploading a
 * file or creating a batch costs nothing and holds nothing (a batch's lines are priced as they run),
 * so neither is refused by a spent budget nor waits on the budget store.
 */
function priced(target: RouteTarget): boolean {
  return target.charge?.tokenRoute !== undefined || target.tool !== undefined;
}

/** What the budgets price: the route's units, its model, and the body the worst case is read from. */
function budgetAsk(req: Request, res: Response, target: RouteTarget, tokens: { input: number; output: number } | undefined): BudgetAsk {
  const json: unknown = res.locals.json;
  const model = typeof json === "object" && json !== null ? (json as { model?: unknown }).model : undefined;
  return {
    route: target.charge?.tokenRoute ?? req.path,
    model: typeof model === "string" ? model : undefined,
    tool: target.tool,
    body: json,
    uploadBytes: target.body === "multipart" && Buffer.isBuffer(req.body) ? req.body.length : 0,
    ...(tokens && target.body === "json" ? { tokens } : {}),
    job: target.backend === "jobs",
  };
}

/** How the answer ended, for the budget: the backend's report as it came (read with other settlements, later). */
function budgetEndOf(res: Response): BudgetEnd {
  return { kind: "answer", complete: res.writableFinished, status: res.statusCode, outcomeText: res.locals.outcomeText };
}

/** A promise's outcome as a value, so it can wait beside another await without an unhandled rejection. */
function settled<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** The reservation: from the JSON request (its input and the answer's maximum), or from an upload's size when the body is a form. */
function tokenPartsOf(route: string, target: RouteTarget, req: Request, res: Response): { input: number; output: number } {
  if (target.body === "multipart") return { input: estimateUploadTokens(Buffer.isBuffer(req.body) ? req.body.length : 0), output: 0 };
  return estimateTokenParts(route, res.locals.json);
}
