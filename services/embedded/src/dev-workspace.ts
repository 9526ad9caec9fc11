import { CreatedApiKey, Workspace, WorkspaceList } from "@gw/contracts";

/**
 * On a fresh data folder, creates a development workspace and key through the admin API (the same
 * door an operator uses), so the first start prints a key that works.
 */
export async function ensureDevelopmentWorkspace(adminUrl: string, adminToken: string): Promise<{ key?: string; workspaceId?: string; count: number }> {
  const call = async (path: string, body?: unknown) => {
    const res = await fetch(`${adminUrl}${path}`, {
      method: body ? "POST" : "GET",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`admin ${path} answered ${res.status}: ${await res.text()}`);
    return res.json() as Promise<unknown>;
  };
  const existing = WorkspaceList.parse(await call("/admin/workspaces"));
  if (existing.data.length > 0) return { count: existing.data.length };
  const workspace = Workspace.parse(await call("/admin/workspaces", { name: "development", plan: "pro", models: ["*"] }));
  const key = CreatedApiKey.parse(await call(`/admin/workspaces/${workspace.id}/keys`, { name: "development" }));
  return { key: key.key, workspaceId: workspace.id, count: 1 };
}
