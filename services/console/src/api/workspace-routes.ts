import type { Request, Response, Router } from "express";
import { type ApiKey, CreateKeyBody, CreateWorkspaceBody, PatchKeyBody, PatchWorkspaceBody, type Workspace, type WorkspaceAction } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { allowedByAll } from "@gw/service-kit";
import { type Acting, actIn, actionsFor, assertMay, assertOperator, principalFor, signedInOf } from "../access";
import type { AdminAnswer } from "../admin-client";
import type { ConsoleContext } from "./context";

const ws = (acting: Acting) => encodeURIComponent(acting.workspace.id);

/** Which action each field of a workspace change needs (docs/console.md). */
const workspaceFieldActions: Record<keyof PatchWorkspaceBody, WorkspaceAction | "operator"> = {
  name: "workspace.settings",
  timezone: "workspace.settings",
  limits: "limits.manage",
  budget: "budgets.manage",
  logging: "logging.manage",
  plan: "operator",
  subscription: "operator",
  models: "operator",
  tools: "operator",
};

/** Which action each field of a key change needs, beyond managing the key itself. */
const keyFieldActions: Partial<Record<keyof PatchKeyBody | keyof CreateKeyBody, WorkspaceAction>> = {
  limits: "limits.manage",
  budget: "budgets.manage",
  logging: "logging.manage",
};

/** Workspaces, keys, models and the ledger's reads, each behind its action in the matrix. */
export function mountWorkspaceRoutes(router: Router, ctx: ConsoleContext): void {
  const act = (req: Request, res: Response, action: WorkspaceAction | readonly WorkspaceAction[]) => actIn(ctx, req, res, action);
  const withRole = (acting: Acting, workspace: Workspace) => ({ ...workspace, role: acting.role, actions: acting.actions });

  router.get("/workspaces", async (_req, res) => {
    const { user } = signedInOf(res);
    if (user.operator) {
      res.json(await ctx.admin.json(principalFor(user, "*"), "GET", "/admin/workspaces"));
      return;
    }
    const memberships = await ctx.store.membershipsOf(user.id);
    const data = await Promise.all(memberships.map((m) => ctx.admin.workspace(principalFor(user, m.workspace_id), m.workspace_id)));
    res.json({ object: "list", data: data.filter((w) => w !== undefined) });
  });

  router.post("/workspaces", async (req, res) => {
    const user = assertOperator(res);
    const body = CreateWorkspaceBody.parse(req.body ?? {});
    res.status(201).json(await ctx.admin.json(principalFor(user, "*"), "POST", "/admin/workspaces", body));
  });

  router.get("/workspaces/:ws", async (req, res) => {
    const acting = await act(req, res, "workspace.read");
    res.json(withRole(acting, acting.workspace));
  });

  router.patch("/workspaces/:ws", async (req, res) => {
    const patch = PatchWorkspaceBody.parse(req.body ?? {});
    const acting = await act(req, res, "workspace.read");
    for (const field of Object.keys(patch) as (keyof PatchWorkspaceBody)[]) {
      const needed = workspaceFieldActions[field];
      if (needed === "operator") {
        if (acting.role !== "operator") throw new GatewayError("forbidden", `Only a platform operator may change ${field}`, { param: field });
      } else assertMay(acting, needed);
    }
    const workspace = await ctx.admin.json<Workspace>(acting.principal, "PATCH", `/admin/workspaces/${ws(acting)}`, patch);
    // The role's reach may change with the plan.
    res.json({ ...workspace, role: acting.role, actions: actionsFor(acting.role, workspace.plan) });
  });

  /**
   * Deleting a workspace closes it for good: every key revoked, the subscription canceled, the
   * members and open invitations gone. Its ledger and audit trail stay, for statements and audits.
   */
  router.delete("/workspaces/:ws", async (req, res) => {
    const acting = await act(req, res, "workspace.delete");
    const keys = await ctx.admin.json<{ data: ApiKey[] }>(acting.principal, "GET", `/admin/workspaces/${ws(acting)}/keys`);
    for (const key of keys.data.filter((k) => k.status !== "revoked")) {
      await ctx.admin.json(acting.principal, "PATCH", `/admin/keys/${encodeURIComponent(key.id)}`, { status: "revoked" });
    }
    await ctx.admin.json(acting.principal, "PATCH", `/admin/workspaces/${ws(acting)}`, { subscription: "canceled" });
    await ctx.store.transaction(async (tx) => {
      await tx.forgetWorkspace(acting.workspace.id);
      await tx.audit({
        actor: acting.user.email,
        action: "workspace.delete",
        workspaceId: acting.workspace.id,
        targetKind: "workspace",
        targetId: acting.workspace.id,
      });
    });
    res.json({ id: acting.workspace.id, object: "workspace", deleted: true });
  });

  router.get("/workspaces/:ws/models", async (req, res) => {
    const acting = await act(req, res, "models.read");
    const data = Object.entries(ctx.gateway.models)
      .filter(([name]) => allowedByAll([acting.workspace.models], name))
      .map(([name, model]) => ({ name, type: model.type, price: priceOf(ctx, name, model.type, model.price) }));
    res.json({ object: "list", data });
  });

  router.get("/workspaces/:ws/keys", async (req, res) => {
    const acting = await act(req, res, "keys.read");
    res.json(await ctx.admin.json(acting.principal, "GET", `/admin/workspaces/${ws(acting)}/keys`));
  });

  router.post("/workspaces/:ws/keys", async (req, res) => {
    const body = CreateKeyBody.parse(req.body ?? {});
    const acting = await act(req, res, "keys.create");
    for (const field of Object.keys(body) as (keyof CreateKeyBody)[]) {
      const needed = keyFieldActions[field];
      if (needed) assertMay(acting, needed);
    }
    res.status(201).json(await ctx.admin.json(acting.principal, "POST", `/admin/workspaces/${ws(acting)}/keys`, body));
  });

  router.patch("/workspaces/:ws/keys/:key", async (req, res) => {
    const patch = PatchKeyBody.parse(req.body ?? {});
    const acting = await act(req, res, "keys.read");
    const keys = await ctx.admin.json<{ data: ApiKey[] }>(acting.principal, "GET", `/admin/workspaces/${ws(acting)}/keys`);
    const key = keys.data.find((k) => k.id === req.params.key);
    if (!key) throw new GatewayError("not_found", `No key found with id ${String(req.params.key)}`, { param: "key_id" });
    if (!acting.may("keys.manage")) {
      assertMay(acting, "keys.manage_own");
      if (key.created_by !== acting.user.id) throw new GatewayError("forbidden", "Your role may manage only the keys you created");
    }
    for (const field of Object.keys(patch) as (keyof PatchKeyBody)[]) {
      const needed = keyFieldActions[field];
      if (needed) assertMay(acting, needed);
    }
    res.json(await ctx.admin.json(acting.principal, "PATCH", `/admin/keys/${encodeURIComponent(key.id)}`, patch));
  });

  // The ledger's reads and the budget's counters: the admin API's answers, for this workspace only.
  const relayed: { path: string; action: WorkspaceAction; admin: (acting: Acting, req: Request) => string }[] = [
    { path: "/workspaces/:ws/usage", action: "usage.read", admin: (a, req) => `/admin/usage?${scopedQuery(req, a)}` },
    { path: "/workspaces/:ws/logs", action: "logs.read", admin: (a, req) => `/admin/logs?${scopedQuery(req, a)}` },
    {
      path: "/workspaces/:ws/statement",
      action: "statements.read",
      admin: (a, req) => `/admin/workspaces/${ws(a)}/statement?${scopedQuery(req, a, false)}`,
    },
    { path: "/workspaces/:ws/budget", action: "budgets.read", admin: (a) => `/admin/workspaces/${ws(a)}/budget` },
  ];
  for (const route of relayed) {
    router.get(route.path, async (req, res) => {
      const acting = await act(req, res, route.action);
      relay(res, await ctx.admin.call(acting.principal, "GET", route.admin(acting, req)));
    });
  }

  router.get("/workspaces/:ws/logs/:requestId", async (req, res) => {
    const acting = await act(req, res, "logs.read");
    const answer = await ctx.admin.call(acting.principal, "GET", `/admin/logs/${encodeURIComponent(String(req.params.requestId))}`);
    if (answer.status !== 200 || acting.may("logs.bodies")) return relay(res, answer);
    // Metadata only for a role without `logs.bodies`: the bodies never leave the console.
    const { request_body: _request, response_body: _response, ...record } = JSON.parse(answer.body.toString("utf8")) as Record<string, unknown>;
    res.json(record);
  });

  router.get("/workspaces/:ws/credentials", async (req, res) => {
    const acting = await act(req, res, "credentials.manage");
    const list = await ctx.admin.json<{ object: "list"; data: unknown[] }>(acting.principal, "GET", `/admin/workspaces/${ws(acting)}/credentials`);
    // The configured providers too, so a form can offer them.
    res.json({ ...list, providers: Object.keys(ctx.gateway.providers) });
  });
  for (const method of ["PUT", "DELETE"] as const) {
    router[method === "PUT" ? "put" : "delete"]("/workspaces/:ws/credentials/:provider", async (req, res) => {
      const acting = await act(req, res, "credentials.manage");
      const path = `/admin/workspaces/${ws(acting)}/credentials/${encodeURIComponent(String(req.params.provider))}`;
      relay(res, await ctx.admin.call(acting.principal, method, path, method === "PUT" ? (req.body ?? {}) : undefined));
    });
  }
}

/** The caller's query with the workspace set to the one acted in (any other is not theirs to ask). */
function scopedQuery(req: Request, acting: Acting, withWorkspace = true): string {
  const at = req.originalUrl.indexOf("?");
  const query = new URLSearchParams(at >= 0 ? req.originalUrl.slice(at + 1) : "");
  query.delete("workspace_id");
  if (withWorkspace) query.set("workspace_id", acting.workspace.id);
  if (!query.has("tz") && req.path.endsWith("/usage")) query.set("tz", acting.workspace.timezone);
  return query.toString();
}

export function relay(res: Response, answer: AdminAnswer): void {
  res.status(answer.status);
  for (const name of ["content-type", "content-disposition", "usage-source"]) {
    const value = answer.headers.get(name);
    if (value) res.setHeader(name, value);
  }
  res.send(answer.body);
}

/** Token models' prices per million tokens, from the config or the price library; else the config's. */
function priceOf(ctx: ConsoleContext, name: string, type: string, configured: unknown): Record<string, unknown> | null {
  const route = type === "chat" ? "/v1/chat/completions" : type === "completion" ? "/v1/completions" : type === "embedding" ? "/v1/embeddings" : undefined;
  if (route === undefined) return (configured as Record<string, unknown> | undefined) ?? null;
  const per = (usage: Record<string, number>) => ctx.pricer.price({ model: name, route, usage }).cost_usd;
  const input = per({ input_tokens: 1_000_000 });
  if (input === null) return (configured as Record<string, unknown> | undefined) ?? null;
  const output = type === "embedding" ? undefined : per({ output_tokens: 1_000_000 });
  return { input_per_mtok: Number(input), ...(output === undefined || output === null ? {} : { output_per_mtok: Number(output) }) };
}
