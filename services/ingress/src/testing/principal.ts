import type { Workspace } from "@gw/contracts";
import { defaultLogging, type KeyPrincipal } from "../store/identity-store";

/**
 * A key and its workspace as authentication finds them, for unit tests: an active key of an active
 * pro workspace with no overrides, changed by `key` and `workspace`.
 */
export function testPrincipal(key: Partial<Omit<KeyPrincipal, "workspace">> = {}, workspace: Partial<Workspace> = {}): KeyPrincipal {
  return {
    keyId: "key_1",
    keyStatus: "active",
    keyModels: null,
    keyTools: null,
    keyLimits: {},
    keyBudget: null,
    keyLogging: null,
    sealedCredentials: {},
    ...key,
    workspace: {
      id: "ws_1",
      object: "workspace",
      name: "w",
      plan: "pro",
      subscription: "active",
      models: ["*"],
      tools: [],
      limits: {},
      timezone: "UTC",
      budget: null,
      logging: { ...defaultLogging },
      created_at: 0,
      updated_at: 0,
      ...workspace,
    },
  };
}
