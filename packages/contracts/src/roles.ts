import type { PlanName } from "./identity";

/**
 * Who may do what in the console: one table, data rather than code, that the console API checks on
 * every call and the web app reads to hide what a role cannot do (issue 24). A person is either a
 * platform `operator` (every workspace) or a member of workspaces, with one role in each.
 */
export const workspaceRoles = ["owner", "admin", "developer", "billing", "viewer"] as const;
export type WorkspaceRole = (typeof workspaceRoles)[number];

/** Actions within one workspace. `keys.manage_own`: the keys the person created; `keys.manage`: every key. */
export const workspaceActions = [
  "workspace.read",
  "workspace.settings",
  "workspace.delete",
  "team.read",
  "team.manage",
  "models.read",
  "keys.read",
  "keys.create",
  "keys.manage_own",
  "keys.manage",
  "limits.manage",
  "budgets.read",
  "budgets.manage",
  "credentials.manage",
  "logging.manage",
  "usage.read",
  "statements.read",
  "logs.read",
  "logs.bodies",
  "audit.read",
] as const;
export type WorkspaceAction = (typeof workspaceActions)[number];

/** Actions on the platform itself: the operator's alone. */
export const platformActions = ["workspaces.list", "workspaces.create", "plans.change", "subscriptions.cancel"] as const;
export type PlatformAction = (typeof platformActions)[number];

const reading: readonly WorkspaceAction[] = [
  "workspace.read",
  "team.read",
  "models.read",
  "keys.read",
  "budgets.read",
  "usage.read",
  "statements.read",
  "logs.read",
  "audit.read",
];

/** The matrix. `owner` may do everything in its workspace; the others what the product promises them. */
export const rolePermissions: Readonly<Record<WorkspaceRole, readonly WorkspaceAction[]>> = {
  owner: workspaceActions,
  admin: [
    ...reading,
    "keys.create",
    "keys.manage_own",
    "keys.manage",
    "limits.manage",
    "budgets.manage",
    "credentials.manage",
    "logging.manage",
    "logs.bodies",
  ],
  developer: ["workspace.read", "models.read", "keys.read", "keys.create", "keys.manage_own", "usage.read", "logs.read"],
  billing: ["workspace.read", "usage.read", "statements.read", "budgets.read", "budgets.manage"],
  viewer: reading,
};

/**
 * The role a member really has: roles other than owner are the Enterprise plan's, so on another plan
 * they are inert (the member keeps the role, which applies again if the workspace returns to
 * Enterprise) and only owners act.
 */
export function effectiveRole(role: WorkspaceRole, plan: PlanName): WorkspaceRole | undefined {
  return role === "owner" || plan === "enterprise" ? role : undefined;
}

/** Whether a member with `role` in a workspace on `plan` may do `action` there. */
export function mayDo(role: WorkspaceRole, plan: PlanName, action: WorkspaceAction): boolean {
  const effective = effectiveRole(role, plan);
  return effective !== undefined && rolePermissions[effective].includes(action);
}
