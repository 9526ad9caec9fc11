import type { Request, Response, Router } from "express";
import {
  type ConsoleInvitation,
  type ConsoleMember,
  CreateInvitationBody,
  effectiveRole,
  PatchMemberBody,
  type Workspace,
  type WorkspaceRole,
} from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { actIn, signedInOf } from "../access";
import type { LinkRow } from "../store";
import { type ConsoleContext, consoleLink } from "./context";

const seconds = (t: Date | string) => Math.floor(new Date(t).getTime() / 1000);

/** Roles other than owner are the Enterprise plan's: elsewhere everyone invited is an owner. */
function assertRoleOnPlan(role: WorkspaceRole, workspace: Workspace): void {
  if (role !== "owner" && workspace.plan !== "enterprise") {
    throw new GatewayError("conflict", `Roles other than owner are part of the Enterprise plan; on ${workspace.plan} every member is an owner`, {
      param: "role",
    });
  }
}

function invitation(row: LinkRow, link?: string): ConsoleInvitation {
  return {
    id: row.id,
    email: row.email,
    role: row.role as WorkspaceRole,
    created_at: seconds(row.created_at),
    expires_at: seconds(row.expires_at),
    ...(link ? { link } : {}),
  };
}

/** The team: members, their roles, invitations; and the audit trail of the workspace. */
export function mountTeamRoutes(router: Router, ctx: ConsoleContext): void {
  const act = (req: Request, res: Response, action: Parameters<typeof actIn>[3]) => actIn(ctx, req, res, action);

  router.get("/workspaces/:ws/members", async (req, res) => {
    const acting = await act(req, res, "team.read");
    const data: ConsoleMember[] = (await ctx.store.members(acting.workspace.id)).map((m) => ({
      user_id: m.user_id,
      email: m.email,
      name: m.name,
      role: m.role,
      effective_role: effectiveRole(m.role, acting.workspace.plan) ?? null,
      joined_at: seconds(m.created_at),
    }));
    res.json({ object: "list", data });
  });

  router.patch("/workspaces/:ws/members/:user", async (req, res) => {
    const { role } = PatchMemberBody.parse(req.body ?? {});
    const acting = await act(req, res, "team.manage");
    assertRoleOnPlan(role, acting.workspace);
    const userId = String(req.params.user);
    await ctx.store.transaction(async (tx) => {
      const member = await tx.membership(acting.workspace.id, userId);
      if (!member) throw new GatewayError("not_found", `No member ${userId} in this workspace`, { param: "user_id" });
      const owners = await tx.ownersLocked(acting.workspace.id);
      if (member.role === "owner" && role !== "owner" && owners.length <= 1) {
        throw new GatewayError("conflict", "A workspace keeps at least one owner: make someone else owner first", { param: "role" });
      }
      await tx.setMembership(acting.workspace.id, userId, role);
      await tx.audit({
        actor: acting.user.email,
        action: "member.role",
        workspaceId: acting.workspace.id,
        targetKind: "person",
        targetId: userId,
        detail: { before: member.role, after: role },
      });
    });
    res.json({ user_id: userId, role, effective_role: effectiveRole(role, acting.workspace.plan) ?? null });
  });

  router.delete("/workspaces/:ws/members/:user", async (req, res) => {
    const userId = String(req.params.user);
    // Anyone may leave (their role notwithstanding); removing someone else takes team.manage.
    const acting = await act(req, res, userId === signedInOf(res).user.id ? [] : "team.manage");
    await ctx.store.transaction(async (tx) => {
      const member = await tx.membership(acting.workspace.id, userId);
      if (!member) throw new GatewayError("not_found", `No member ${userId} in this workspace`, { param: "user_id" });
      const owners = await tx.ownersLocked(acting.workspace.id);
      if (member.role === "owner" && owners.length <= 1) throw new GatewayError("conflict", "The last owner of a workspace cannot be removed");
      await tx.removeMembership(acting.workspace.id, userId);
      await tx.audit({
        actor: acting.user.email,
        action: userId === acting.user.id ? "member.leave" : "member.remove",
        workspaceId: acting.workspace.id,
        targetKind: "person",
        targetId: userId,
        detail: { role: member.role },
      });
    });
    res.json({ user_id: userId, deleted: true });
  });

  router.get("/workspaces/:ws/invitations", async (req, res) => {
    const acting = await act(req, res, "team.read");
    res.json({ object: "list", data: (await ctx.store.invitations(acting.workspace.id, ctx.clock())).map((row) => invitation(row)) });
  });

  router.post("/workspaces/:ws/invitations", async (req, res) => {
    const body = CreateInvitationBody.parse(req.body ?? {});
    const acting = await act(req, res, "team.manage");
    assertRoleOnPlan(body.role, acting.workspace);
    const { token, row } = await ctx.store.createLink({
      email: body.email,
      workspaceId: acting.workspace.id,
      role: body.role,
      createdBy: acting.user.id,
      expiresAt: ctx.clock() + ctx.linkTtlMs.invitation,
    });
    await ctx.store.audit({
      actor: acting.user.email,
      action: "invitation.create",
      workspaceId: acting.workspace.id,
      targetKind: "invitation",
      targetId: row.id,
      detail: { email: body.email, role: body.role },
    });
    const link = consoleLink(ctx, req, "invite", token);
    const emailed = ctx.mailer
      ? await ctx.mailer.send({
          to: body.email,
          link,
          workspace: acting.workspace.name,
          role: body.role,
          invitedBy: acting.user.name ?? acting.user.email,
          expiresAt: new Date(row.expires_at),
        })
      : false;
    res.status(201).json({ ...invitation(row, link), emailed });
  });

  router.delete("/workspaces/:ws/invitations/:id", async (req, res) => {
    const acting = await act(req, res, "team.manage");
    const id = String(req.params.id);
    if (!(await ctx.store.revokeInvitation(acting.workspace.id, id))) throw new GatewayError("not_found", `No open invitation ${id}`, { param: "id" });
    await ctx.store.audit({ actor: acting.user.email, action: "invitation.revoke", workspaceId: acting.workspace.id, targetKind: "invitation", targetId: id });
    res.json({ id, deleted: true });
  });

  /**
   * The workspace's trail: ingress's (workspaces, keys, credentials) and the console's (the team),
   * newest first, each naming the person.
   */
  router.get("/workspaces/:ws/audit", async (req, res) => {
    const acting = await act(req, res, "audit.read");
    const limit = Math.min(500, Math.max(1, Number(req.query.limit) || 100));
    const [changes, team] = await Promise.all([
      ctx.admin.json<{ data: { at: string }[] }>(
        acting.principal,
        "GET",
        `/admin/audit?workspace_id=${encodeURIComponent(acting.workspace.id)}&limit=${limit}`,
      ),
      ctx.store.auditOf(acting.workspace.id, limit),
    ]);
    const teamRecords = team.map((row) => ({
      object: "audit_record",
      id: `console_${row.id}`,
      at: new Date(row.at).toISOString(),
      actor: row.actor,
      action: row.action,
      workspace_id: row.workspace_id,
      target: { kind: row.target_kind, id: row.target_id },
      before: null,
      after: row.detail,
    }));
    const data = [...changes.data, ...teamRecords].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).slice(0, limit);
    res.json({ object: "list", data });
  });
}
