import type { Request, Response } from "express";
import {
  type ConsoleMembership,
  type ConsolePrincipal,
  effectiveRole,
  rolePermissions,
  type Workspace,
  type WorkspaceAction,
  workspaceActions,
  type WorkspaceRole,
} from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { AdminClient } from "./admin-client";
import type { SignedIn } from "./sessions";
import type { PeopleStore, UserRow } from "./store";

/** A person acting in one workspace: what they may do there, and how to ask ingress as them. */
export interface Acting {
  user: UserRow;
  workspace: Workspace;
  /** Their role there; "operator" for a platform operator who is not a member. */
  role: WorkspaceRole | "operator";
  actions: readonly WorkspaceAction[];
  principal: ConsolePrincipal;
  may(action: WorkspaceAction): boolean;
}

export const signedInOf = (res: Response): SignedIn => res.locals.signedIn as SignedIn;

/** The principal ingress gets for a person: scoped to one workspace, or "*" for platform calls. */
export function principalFor(user: UserRow, workspaceId: string): ConsolePrincipal {
  return { user_id: user.id, email: user.email, workspace_id: workspaceId };
}

/** What a role may do on a plan (an operator: everything). */
export function actionsFor(role: WorkspaceRole | "operator", plan: Workspace["plan"]): readonly WorkspaceAction[] {
  if (role === "operator") return workspaceActions;
  const effective = effectiveRole(role, plan);
  return effective ? rolePermissions[effective] : [];
}

/**
 * Checks the matrix for one call: a person who is not a member (nor an operator) gets 404, as if
 * the workspace did not exist; a member whose role does not allow `action` gets 403 saying why.
 */
export async function actIn(
  deps: { store: PeopleStore; admin: AdminClient },
  req: Request,
  res: Response,
  action: WorkspaceAction | readonly WorkspaceAction[],
): Promise<Acting> {
  const { user } = signedInOf(res);
  const workspaceId = String(req.params.ws);
  const membership = await deps.store.membership(workspaceId, user.id);
  const role: WorkspaceRole | "operator" | undefined = user.operator ? "operator" : membership?.role;
  if (role === undefined) throw noSuchWorkspace(workspaceId);
  const principal = principalFor(user, workspaceId);
  const workspace = await deps.admin.workspace(principal, workspaceId);
  if (!workspace) throw noSuchWorkspace(workspaceId);
  const actions = actionsFor(role, workspace.plan);
  const acting: Acting = { user, workspace, role, actions, principal, may: (a) => actions.includes(a) };
  for (const needed of typeof action === "string" ? [action] : action) assertMay(acting, needed);
  return acting;
}

export function assertMay(acting: Acting, action: WorkspaceAction): void {
  if (acting.may(action)) return;
  const { role, workspace } = acting;
  if (role !== "operator" && role !== "owner" && workspace.plan !== "enterprise") {
    throw new GatewayError(
      "forbidden",
      `Roles other than owner apply on the Enterprise plan only; this workspace is on ${workspace.plan}, so your ${role} role allows nothing here until it returns to Enterprise`,
    );
  }
  throw new GatewayError("forbidden", `Your role (${role}) may not do this: it needs ${action}`);
}

/** Platform calls (every workspace, creating one) are the operator's. */
export function assertOperator(res: Response): UserRow {
  const { user } = signedInOf(res);
  if (!user.operator) throw new GatewayError("forbidden", "Only a platform operator may do this");
  return user;
}

export function noSuchWorkspace(id: string): GatewayError {
  return new GatewayError("not_found", `No workspace found with id ${id}`, { param: "workspace_id" });
}

/** The person's memberships, with each workspace's name and plan and what they may do there. */
export async function membershipsOf(deps: { store: PeopleStore; admin: AdminClient }, user: UserRow): Promise<ConsoleMembership[]> {
  const rows = await deps.store.membershipsOf(user.id);
  const found = await Promise.all(
    rows.map(async (row): Promise<ConsoleMembership | undefined> => {
      const workspace = await deps.admin.workspace(principalFor(user, row.workspace_id), row.workspace_id).catch(() => undefined);
      if (!workspace) return undefined;
      return {
        workspace_id: workspace.id,
        workspace_name: workspace.name,
        plan: workspace.plan,
        role: row.role,
        effective_role: effectiveRole(row.role, workspace.plan) ?? null,
        actions: [...actionsFor(user.operator ? "operator" : row.role, workspace.plan)],
      };
    }),
  );
  return found.filter((m): m is ConsoleMembership => m !== undefined);
}
