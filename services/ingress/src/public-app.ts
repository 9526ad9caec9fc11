import express, { type Express, type RequestHandler } from "express";
import { internalHeaderPrefix } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { allowedByAll, createServiceApp, finishApp, type Health, type ServiceMetrics } from "@gw/service-kit";
import type { Authenticator } from "./auth/authenticator";
import type { BackendUrls } from "./proxy/forward";
import { createForwarders } from "./proxy/forward";
import { resolveRoute, type Backend } from "./routes";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      backend?: Backend;
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
}

/** The public port: health, then /v1 behind authentication, then the proxy to the owning service. */
export function createPublicApp(deps: PublicAppDeps): Express {
  const app = createServiceApp({ logger: deps.logger, metrics: deps.metrics, trustRequestId: false });
  deps.health.mount(app);
  const forwarders = createForwarders(deps.backends, deps.internalSecret);
  app.use(gate(deps.authenticator));
  app.use(express.raw({ type: () => true, limit: deps.bodyLimitBytes }));
  app.use(checkModel);
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
    const { identity } = await authenticator.authenticate(req.headers);
    res.locals.identity = identity;
    if (!target) throw new GatewayError("not_found", `Unknown route: ${req.method} ${req.path}`);
    if (target.tool && !identity.tools.includes(target.tool)) {
      throw new GatewayError("tool_not_allowed", `The tool \`${target.tool}\` is not enabled for this key`);
    }
    res.locals.backend = target.backend;
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
  const model = typeof parsed === "object" && parsed !== null ? (parsed as { model?: unknown }).model : undefined;
  const identity = res.locals.identity;
  if (typeof model === "string" && identity && !allowedByAll(identity.models, model)) {
    throw new GatewayError("model_not_allowed", `The model \`${model}\` is not available to this key`, { param: "model" });
  }
  next();
};
