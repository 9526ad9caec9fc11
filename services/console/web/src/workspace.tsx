import { useQuery } from "@tanstack/react-query";
import { createContext, type ReactNode, Suspense, useContext, useEffect } from "react";
import { Outlet, useParams } from "react-router";
import { ApiError, get, wsPath } from "./api";
import { ErrorBox, Loading, Notice } from "./components/States";
import { useSession } from "./session";
import type { WorkspaceAction, WorkspaceWithRole } from "./types";

export interface WorkspaceScope {
  ws: string;
  workspace: WorkspaceWithRole;
  tz: string;
  can: (action: WorkspaceAction) => boolean;
}

const Ctx = createContext<WorkspaceScope | null>(null);

export function useWorkspace(): WorkspaceScope {
  const scope = useContext(Ctx);
  if (!scope) throw new Error("useWorkspace outside a workspace page");
  return scope;
}

export const workspaceKey = (ws: string) => ["workspace", ws] as const;

export function useWorkspaceQuery(ws: string | undefined) {
  return useQuery({
    queryKey: workspaceKey(ws ?? ""),
    queryFn: () => get<WorkspaceWithRole>(wsPath(ws ?? "")),
    enabled: ws !== undefined,
    staleTime: 60_000,
  });
}

export const LAST_WORKSPACE = "gw-console-workspace";

/** The pages of a workspace, and the actions any one of which opens each (docs/console.md). */
export const workspacePages: { path: string; label: string; anyOf: WorkspaceAction[] }[] = [
  { path: "", label: "Overview", anyOf: ["usage.read"] },
  { path: "keys", label: "Keys", anyOf: ["keys.read"] },
  { path: "models", label: "Models", anyOf: ["models.read"] },
  { path: "logs", label: "Logs", anyOf: ["logs.read"] },
  { path: "usage", label: "Usage & billing", anyOf: ["usage.read", "statements.read", "budgets.read"] },
  { path: "team", label: "Team", anyOf: ["team.read"] },
  { path: "settings", label: "Settings", anyOf: ["workspace.settings", "limits.manage", "budgets.manage", "logging.manage", "credentials.manage"] },
  { path: "audit", label: "Audit log", anyOf: ["audit.read"] },
];

export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Gateway console`;
  }, [title]);
}

/** A workspace's pages: the workspace loaded once, its zone and the person's actions shared below. */
export function WorkspaceScopeRoute() {
  const { ws = "" } = useParams();
  const session = useSession();
  const query = useWorkspaceQuery(ws);
  useEffect(() => {
    if (query.data) localStorage.setItem(LAST_WORKSPACE, ws);
  }, [query.data, ws]);
  if (query.isPending) return <Loading label="Loading the workspace" />;
  if (query.isError) {
    const membership = session.memberships.find((m) => m.workspace_id === ws);
    if (query.error instanceof ApiError && query.error.status === 403 && membership && membership.effective_role === null) {
      return (
        <section className="page">
          <h1>{membership.workspace_name}</h1>
          <Notice tone="warning">
            <p>
              Your <strong>{membership.role}</strong> role applies on the Enterprise plan only, and this workspace is on <strong>{membership.plan}</strong>. You
              stay a member, and the role applies again if the workspace returns to Enterprise. Ask an owner if you need access now.
            </p>
          </Notice>
        </section>
      );
    }
    if (query.error instanceof ApiError && query.error.status === 404) {
      return (
        <section className="page">
          <h1>Workspace not found</h1>
          <Notice tone="warning">
            <p>There is no workspace {ws} that you are a member of.</p>
          </Notice>
        </section>
      );
    }
    return <ErrorBox error={query.error} retry={() => void query.refetch()} />;
  }
  const workspace = query.data;
  const scope: WorkspaceScope = {
    ws,
    workspace,
    tz: workspace.timezone || "UTC",
    can: (action) => workspace.actions.includes(action),
  };
  return (
    <Ctx.Provider value={scope}>
      {workspace.subscription === "canceled" && (
        <div className="page banner">
          <Notice tone="warning">
            <p>
              <strong>This workspace's subscription is canceled.</strong> Its keys are refused (403 subscription_inactive) until it is active again; its history
              stays readable here.
            </p>
          </Notice>
        </div>
      )}
      <Suspense fallback={<Loading label="Loading the page" />}>
        <Outlet />
      </Suspense>
    </Ctx.Provider>
  );
}

/** A page the person's role may not open says so (the navigation does not offer it either). */
export function Need({ anyOf, children }: { anyOf: WorkspaceAction[]; children: ReactNode }) {
  const { can, workspace } = useWorkspace();
  if (anyOf.some(can)) return <>{children}</>;
  return (
    <section className="page">
      <h1>Not available to your role</h1>
      <Notice tone="warning">
        <p>
          Your role here ({workspace.role}) does not include this page. Ask an owner of {workspace.name} if you need it.
        </p>
      </Notice>
    </section>
  );
}
