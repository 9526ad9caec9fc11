import express, { type Express, type Response } from "express";
import { CreateKeyBody, CreateWorkspaceBody, PatchKeyBody, PatchWorkspaceBody } from "@gw/contracts";
import type { Bus } from "@gw/bus";
import type { PlanLimitsTable } from "@gw/config";
import type { Budget, Limits, Workspace, WorkspaceLogging } from "@gw/contracts";
import { fromZodError, GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import type { z } from "zod";
import { createServiceApp, finishApp, routeLabel, type Sealer, type ServiceMetrics } from "@gw/service-kit";
import type { CredentialStore } from "../credentials/credential-store";
import type { BudgetGate } from "../budgets/budget-gate";
import { AuditQuery, type AuditStore } from "../store/audit-store";
import { effectiveWorkspaceLimits } from "../limits/plan-limits";
import type { IdentityStore } from "../store/identity-store";
import { actorOf, assertInScope, assertPlatform, callerScope, consolePrincipals, personOf, requireAdmin } from "./admin-caller";
import { type AdmissionDeps, mountAdmissions } from "./admissions";
import { mountCredentialRoutes } from "./credential-routes";
import { mountUsageRoutes } from "./usage-routes";

export interface AdminAppDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  store: IdentityStore;
  /** The audit trail the store's tables keep (their triggers write it). */
  audit: AuditStore;
  bus: Bus;
  adminToken: string;
  /** Checks the console's signed `x-gw-principal` (a person acting in one workspace). */
  internalSecret: string;
  /** Default limits per plan (config file), against which a key's limits are checked. */
  plans: PlanLimitsTable;
  /** Applies an identity change to this replica's cache at once (the broadcast reaches the others). */
  onIdentityChanged: (kind: "key" | "workspace", id: string) => void;
  /** Enterprise workspaces' own provider credentials; the routes are mounted when given. */
  credentials?: { store: CredentialStore; sealer: Sealer | undefined; providers: readonly string[] };
  /** Where the usage ledger's reads go (the usage service), and the secret its calls are signed with. */
  usage?: { url: string | undefined; internalSecret: string; consoleUrl?: string };
  /** Monthly budgets, whose counters `GET /admin/workspaces/{id}/budget` reads. */
  budgets?: BudgetGate;
  /** Admits batches' lines for the jobs service (`POST /internal/admissions`); mounted when given. */
  admissions?: Omit<AdmissionDeps, "store" | "internalSecret" | "budgets">;
}

/** The admin API (docs/configuration.md), on its own port, behind the admin token. */
export function createAdminApp(deps: AdminAppDeps): Express {
  const { store, audit } = deps;
  const app = createServiceApp({ logger: deps.logger, metrics: deps.metrics, trustRequestId: true });
  app.get("/livez", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/metrics", async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  if (deps.admissions) mountAdmissions(app, { ...deps.admissions, store, internalSecret: deps.internalSecret, budgets: deps.budgets });
  app.use("/admin", requireAdmin(deps.adminToken, consolePrincipals(deps.internalSecret)), express.json({ limit: "1mb" }));

  const changed = async (kind: "key" | "workspace", id: string) => {
    deps.onIdentityChanged(kind, id);
    await deps.bus.publish("identity.changed", { kind, id, at: Date.now() });
  };
  // The store as the caller: a person's changes name them in the audit trail.
  const storeOf = (res: Response) => {
    const actor = actorOf(res);
    return actor === undefined ? store : store.actingAs(actor);
  };
  const workspaceIn = async (res: Response, id: string) => {
    assertInScope(res, id);
    return found(store.getWorkspace(id), "workspace");
  };
  const keyIn = async (res: Response, id: string) => {
    const key = await found(store.getKey(id), "key");
    assertInScope(res, key.workspace_id, "key");
    return key;
  };

  app.post("/admin/workspaces", routeLabel("/admin/workspaces"), async (req, res) => {
    assertPlatform(res);
    const body = CreateWorkspaceBody.parse(req.body ?? {});
    assertLoggingAllowed(body.logging, body.plan);
    res.status(201).json(await storeOf(res).createWorkspace(body));
  });
  app.get("/admin/workspaces", routeLabel("/admin/workspaces"), async (_req, res) => {
    assertPlatform(res);
    res.json({ object: "list", data: await store.listWorkspaces() });
  });
  app.get("/admin/workspaces/:id", routeLabel("/admin/workspaces/:id"), async (req, res) => {
    res.json(await workspaceIn(res, req.params.id as string));
  });
  app.patch("/admin/workspaces/:id", routeLabel("/admin/workspaces/:id"), async (req, res) => {
    const patch = PatchWorkspaceBody.parse(req.body ?? {});
    const current = await workspaceIn(res, req.params.id as string);
    if (patch.logging?.bodies) assertLoggingAllowed(patch.logging, patch.plan ?? current.plan);
    const workspace = await found(storeOf(res).patchWorkspace(current.id, patch), "workspace");
    await changed("workspace", workspace.id);
    res.json(workspace);
  });
  app.post("/admin/workspaces/:id/keys", routeLabel("/admin/workspaces/:id/keys"), async (req, res) => {
    const body = CreateKeyBody.parse(req.body ?? {});
    const workspace = await workspaceIn(res, req.params.id as string);
    if (body.limits) assertKeyNarrows(body.limits, deps.plans, workspace);
    if (body.budget) assertBudgetNarrows(body.budget, workspace);
    const { key, secret } = await storeOf(res).createKey(workspace.id, body, personOf(res));
    res.status(201).json({ ...key, key: secret });
  });
  app.get("/admin/workspaces/:id/keys", routeLabel("/admin/workspaces/:id/keys"), async (req, res) => {
    const workspace = await workspaceIn(res, req.params.id as string);
    res.json({ object: "list", data: await store.listKeys(workspace.id) });
  });
  app.patch("/admin/keys/:id", routeLabel("/admin/keys/:id"), async (req, res) => {
    const patch = PatchKeyBody.parse(req.body ?? {});
    const key = await keyIn(res, req.params.id as string);
    if (patch.limits || patch.budget) {
      const workspace = await found(store.getWorkspace(key.workspace_id), "workspace");
      if (patch.limits) assertKeyNarrows(patch.limits, deps.plans, workspace);
      if (patch.budget) assertBudgetNarrows(patch.budget, workspace);
    }
    const result = await found(storeOf(res).patchKey(key.id, patch), "key");
    if (result === "revoked") throw new GatewayError("conflict", "A revoked key cannot be enabled or disabled again");
    await changed("key", result.id);
    res.json(result);
  });
  app.get("/admin/audit", routeLabel("/admin/audit"), async (req, res) => {
    const query = parseQuery(AuditQuery, req.query);
    const scope = callerScope(res);
    if (scope !== undefined && query.workspace_id !== undefined) assertInScope(res, query.workspace_id);
    res.json(await audit.list({ ...query, workspace_id: scope ?? query.workspace_id }));
  });
  app.get("/admin/workspaces/:id/budget", routeLabel("/admin/workspaces/:id/budget"), async (req, res) => {
    const workspace = await workspaceIn(res, req.params.id as string);
    if (!deps.budgets) throw new GatewayError("upstream_unavailable", "Budgets are not enforced on this gateway");
    res.json(await deps.budgets.status(workspace, await store.listKeys(workspace.id)));
  });
  if (deps.usage) mountUsageRoutes(app, { usageUrl: deps.usage.url, consoleUrl: deps.usage.consoleUrl, internalSecret: deps.usage.internalSecret });
  const credentials = deps.credentials;
  if (credentials) {
    mountCredentialRoutes(app, {
      credentials: (res) => {
        const actor = actorOf(res);
        return actor === undefined ? credentials.store : credentials.store.actingAs(actor);
      },
      sealer: credentials.sealer,
      providers: credentials.providers,
      workspace: workspaceIn,
      changed: (id) => changed("workspace", id),
    });
  }
  finishApp(app);
  return app;
}

/**
 * A key may only narrow its workspace: each key limit must be at most the workspace's effective one.
 * Checked when the key's limits are written; a workspace lowered later still binds the key, since
 * the limiter applies both scopes.
 */
function assertKeyNarrows(limits: Limits, plans: PlanLimitsTable, workspace: Workspace): void {
  const ceiling = effectiveWorkspaceLimits(plans, workspace);
  for (const field of ["requests_per_minute", "tokens_per_minute"] as const) {
    const value = limits[field];
    if (value !== undefined && value > ceiling[field]) {
      throw new GatewayError(
        "invalid_request",
        `Invalid body: limits.${field}: the key's ${value} exceeds the workspace's ${ceiling[field]} (a key can only narrow its workspace's limits)`,
        { param: `limits.${field}` },
      );
    }
  }
}

/**
 * A key's budget may only narrow its workspace's: at most the workspace's monthly amount when the
 * workspace has a budget. As with limits, a workspace budget lowered later still binds the key,
 * since both scopes are enforced.
 */
function assertBudgetNarrows(budget: Budget, workspace: Workspace): void {
  const ceiling = workspace.budget?.monthly_usd;
  if (ceiling !== undefined && budget.monthly_usd > ceiling) {
    throw new GatewayError(
      "invalid_request",
      `Invalid body: budget.monthly_usd: the key's ${budget.monthly_usd} exceeds the workspace's ${ceiling} (a key can only narrow its workspace's budget)`,
      { param: "budget.monthly_usd" },
    );
  }
}

/** Detailed logs are the Enterprise plan's: capture cannot be turned on for another plan. */
function assertLoggingAllowed(logging: WorkspaceLogging | undefined, plan: Workspace["plan"]): void {
  if (logging?.bodies && plan !== "enterprise") {
    throw new GatewayError("conflict", "Detailed logs (request and answer bodies) are part of the Enterprise plan", { param: "logging.bodies" });
  }
}

function parseQuery<T extends z.ZodType>(schema: T, query: unknown): z.infer<T> {
  const parsed = schema.safeParse(query);
  if (!parsed.success) throw fromZodError(parsed.error, "query");
  return parsed.data;
}

async function found<T>(value: Promise<T | undefined>, what: string): Promise<T> {
  const v = await value;
  if (v === undefined) throw new GatewayError("not_found", `No such ${what}`);
  return v;
}
