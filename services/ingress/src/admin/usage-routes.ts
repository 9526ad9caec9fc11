import type { Express, Request, Response } from "express";
import { type Identity, operatorIdentity, internalHeaders } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { IdentitySigner, routeLabel } from "@gw/service-kit";
import { assertInScope, assertPlatform, callerScope } from "./admin-caller";

export interface UsageRoutesDeps {
  /** The usage service's base URL (USAGE_URL); unset, these routes answer 503. */
  usageUrl: string | undefined;
  /** The console service's base URL (CONSOLE_URL), for `POST /admin/users`; unset, it answers 503. */
  consoleUrl?: string;
  internalSecret: string;
  /** How long a query may take before the admin call fails. */
  timeoutMs?: number;
}

/** Admin path → the usage service's path, for the ledger's reads. */
const routes: { admin: string; label: string; target: (req: Request) => string; workspace?: (req: Request) => string }[] = [
  { admin: "/admin/usage", label: "/admin/usage", target: () => "/v1/usage" },
  { admin: "/admin/logs", label: "/admin/logs", target: () => "/v1/logs" },
  { admin: "/admin/logs/:requestId", label: "/admin/logs/:id", target: (req) => `/v1/logs/${encodeURIComponent(String(req.params.requestId))}` },
  {
    admin: "/admin/workspaces/:id/statement",
    label: "/admin/workspaces/:id/statement",
    target: (req) => `/v1/workspaces/${encodeURIComponent(String(req.params.id))}/statement`,
    workspace: (req) => String(req.params.id),
  },
];

/**
 * The usage ledger's reads (and the console's people) on the admin API (docs/configuration.md): passed to the usage service,
 * which owns the ledger, as the operator (every workspace) or, for a person acting in one workspace
 * through the console, as that workspace (the usage service then answers for it alone), with the
 * query string as given; its answer (JSON, CSV, or an error in the OpenAI envelope) comes back as it is.
 */
export function mountUsageRoutes(app: Express, deps: UsageRoutesDeps): void {
  const signer = new IdentitySigner(deps.internalSecret);
  const operator = { ...operatorIdentity };
  const identityFor = (scope: string | undefined): Identity =>
    scope === undefined ? operator : { workspace_id: scope, key_id: "console", plan: "plus", models: [], tools: [] };
  const call = async (res: Response, service: string, url: string | undefined, path: string, init: RequestInit = {}) => {
    if (!url) throw new GatewayError("upstream_unavailable", `The ${service} service is not configured on this gateway (${service.toUpperCase()}_URL)`);
    try {
      const answer = await fetch(`${url}${path}`, {
        ...init,
        headers: {
          ...(init.headers as Record<string, string>),
          [internalHeaders.identity]: signer.sign(identityFor(callerScope(res))),
          [internalHeaders.requestId]: res.locals.requestId,
        },
        signal: AbortSignal.timeout(deps.timeoutMs ?? 60_000),
      });
      relay(res, answer, await answer.arrayBuffer());
    } catch (err) {
      throw new GatewayError("upstream_unavailable", `The ${service} service did not answer; try again`, { cause: err });
    }
  };
  for (const route of routes) {
    app.get(route.admin, routeLabel(route.label), async (req, res) => {
      if (route.workspace) assertInScope(res, route.workspace(req));
      const query = req.originalUrl.includes("?") ? req.originalUrl.slice(req.originalUrl.indexOf("?")) : "";
      await call(res, "usage", deps.usageUrl, `${route.target(req)}${query}`);
    });
  }
  // People are the console's: `pnpm gw user create` asks it, as the operator, through this port.
  app.post("/admin/users", routeLabel("/admin/users"), async (req, res) => {
    assertPlatform(res);
    await call(res, "console", deps.consoleUrl, "/v1/users", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(req.body ?? {}),
    });
  });
}

function relay(res: Response, answer: globalThis.Response, body: ArrayBuffer): void {
  res.status(answer.status);
  for (const name of ["content-type", "content-disposition", "usage-source"]) {
    const value = answer.headers.get(name);
    if (value) res.setHeader(name, value);
  }
  res.send(Buffer.from(body));
}
