import express, { type Express, type RequestHandler } from "express";
import { internalHeaderPrefix } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { allowedByAll, createServiceApp, finishApp, type Health, type ServiceMetrics } from "@gw/service-kit";
import type { Authenticator } from "./auth/authenticator";
import type { CredentialRelay } from "./credentials/credential-relay";
import { estimateTokens } from "./limits/estimate";
import { rateLimitError, setRateHeaders, type RateLimitGate } from "./limits/rate-limit-gate";
import type { BackendUrls } from "./proxy/forward";
import { createForwarders } from "./proxy/forward";
import { rateLimitFor, resolveRoute, type Backend, type RouteTarget } from "./routes";
import type { KeyPrincipal } from "./store/identity-store";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      backend?: Backend;
      target?: RouteTarget;
      principal?: KeyPrincipal;
      /** The request body, parsed once here when it is JSON. */
      json?: unknown;
      /** Total tokens the backend reported (header or trailer), for settling the reservation. */
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
  bodyLimitBytes: number;
  rateLimits: RateLimitGate;
  rateWindowMs: number;
  credentials: CredentialRelay;
}

/** The public port: health, then /v1 behind authentication, then the proxy to the owning service. */
export function createPublicApp(deps: PublicAppDeps): Express {
  const app = createServiceApp({ logger: deps.logger, metrics: deps.metrics, trustRequestId: false });
  deps.health.mount(app);
  const forwarders = createForwarders(deps.backends, deps.internalSecret, deps.credentials);
  app.use(gate(deps.authenticator));
  app.use(express.raw({ type: () => true, limit: deps.bodyLimitBytes }));
  app.use(checkModel);
  app.use(limitRate(deps.rateLimits, deps.rateWindowMs));
  app.use((req, res, next) => {
    const backend = res.locals.backend;
    if (!backend) return next();
    return forwarders[backend](req, res, next);
  });
  finishApp(app);
  return app;
}

/** Strips client-supplied internal headers, authenticates, resolves the route, checks the tool. */
function gate(authenticator: Authenticator): RequestHandler {
  return async (req, res, next) => {
    if (!req.path.startsWith("/v1/")) return next();
    const target = resolveRoute(req.path);
    // Label first, so refused calls are counted under their route too.
    res.locals.route = target?.label ?? "unmatched";
    for (const name of Object.keys(req.headers)) {
      if (name.startsWith(internalHeaderPrefix)) delete req.headers[name];
    }
    const { identity, principal } = await authenticator.authenticate(req.headers);
    res.locals.identity = identity;
    res.locals.principal = principal;
    if (!target) throw new GatewayError("not_found", `Unknown route: ${req.method} ${req.path}`);
    if (target.tool && !identity.tools.includes(target.tool)) {
      throw new GatewayError("tool_not_allowed", `The tool \`${target.tool}\` is not enabled for this key`);
    }
    res.locals.backend = target.backend;
    res.locals.target = target;
    next();
  };
}

/**
 * For JSON bodies: a body that is not JSON is refused here, and a `model` outside the caller's
 * allow-lists is a 403 before any hop. The raw bytes are forwarded unchanged.
 */
const checkModel: RequestHandler = (req, res, next) => {
  const body: unknown = req.body;
  if (!res.locals.backend || !Buffer.isBuffer(body) || body.length === 0 || !req.is("application/json")) return next();
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw new GatewayError("invalid_request", "Invalid body: not valid JSON");
  }
  res.locals.json = parsed;
  const model = typeof parsed === "object" && parsed !== null ? (parsed as { model?: unknown }).model : undefined;
  const identity = res.locals.identity;
  if (typeof model === "string" && identity && !allowedByAll(identity.models, model)) {
    throw new GatewayError("model_not_allowed", `The model \`${model}\` is not available to this key`, { param: "model" });
  }
  next();
};

/**
 * Checks and charges both scopes in one call to the limiter, sets the x-ratelimit-* headers, and
 * once the answer is complete settles the token reservation against what the backend reported: the
 * real usage when it said, nothing for a failed call, the estimate when the outcome is unknown (a
 * client that went away mid-stream may still have cost tokens upstream).
 */
function limitRate(gate: RateLimitGate, windowMs: number): RequestHandler {
  return async (req, res, next) => {
    const { target, principal } = res.locals;
    const policy = target && principal ? rateLimitFor(target, req.method, req.path) : undefined;
    if (!policy || !principal) return next();
    const tokens = policy.tokenRoute ? estimateTokens(policy.tokenRoute, res.locals.json) : 0;
    const admission = await gate.admit(principal, tokens);
    if (!admission) return next(); // the limiter is unreachable and limits fail open
    setRateHeaders(res, admission.status);
    if (!admission.allowed) throw rateLimitError(admission.denial, windowMs);
    if (tokens > 0) {
      const ticket = admission.ticket;
      // A job's usage is known only when it has run: the jobs service has it settled then.
      if (target!.backend === "jobs") res.locals.tokenTicket = ticket;
      res.once("close", () => {
        const used = res.locals.usageTokens;
        if (used !== undefined) gate.settle(ticket, used);
        else if (res.statusCode >= 400) gate.settle(ticket, 0);
      });
    }
    next();
  };
}
