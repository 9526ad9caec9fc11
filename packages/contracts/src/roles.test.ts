import { describe, expect, it } from "vitest";
import { planNames } from "./identity";
import { effectiveRole, mayDo, rolePermissions, workspaceActions, workspaceRoles } from "./roles";

describe("the console's permission matrix", () => {
  it("when a role is an owner's, then it may do everything in its workspace, on every plan", () => {
    for (const plan of planNames) for (const action of workspaceActions) expect(mayDo("owner", plan, action), `${plan} ${action}`).toBe(true);
  });

  it("when roles are compared, then each holds only what the product promises it", () => {
    expect(mayDo("admin", "enterprise", "credentials.manage")).toBe(true);
    expect(mayDo("admin", "enterprise", "team.manage")).toBe(false);
    expect(mayDo("admin", "enterprise", "workspace.delete")).toBe(false);
    expect(mayDo("developer", "enterprise", "keys.manage_own")).toBe(true);
    expect(mayDo("developer", "enterprise", "keys.manage")).toBe(false);
    expect(mayDo("developer", "enterprise", "logs.read")).toBe(true);
    expect(mayDo("developer", "enterprise", "logs.bodies")).toBe(false);
    expect(mayDo("billing", "enterprise", "statements.read")).toBe(true);
    expect(mayDo("billing", "enterprise", "budgets.manage")).toBe(true);
    expect(mayDo("billing", "enterprise", "keys.read")).toBe(false);
    // A viewer reads, never changes anything, and never sees bodies.
    const viewer = rolePermissions.viewer;
    expect(viewer.some((a) => /\.(manage|manage_own|create|settings|delete)$/.test(a))).toBe(false);
    expect(viewer).not.toContain("logs.bodies");
  });

  it("when every role is listed, then each action names one the table knows, and none is granted twice", () => {
    for (const role of workspaceRoles) {
      const granted = rolePermissions[role];
      expect(new Set(granted).size, role).toBe(granted.length);
      for (const action of granted) expect(workspaceActions).toContain(action);
    }
  });

  it("when a workspace is not on Enterprise, then roles other than owner are inert, and come back with Enterprise", () => {
    for (const role of workspaceRoles.filter((r) => r !== "owner")) {
      expect(effectiveRole(role, "pro")).toBeUndefined();
      expect(effectiveRole(role, "plus")).toBeUndefined();
      expect(effectiveRole(role, "enterprise")).toBe(role);
      for (const action of workspaceActions) expect(mayDo(role, "pro", action)).toBe(false);
    }
  });
});
