import type { PlanLimitsTable } from "@gw/config";
import type { Workspace } from "@gw/contracts";

/** Both limits, always set: what a workspace may use per minute. */
export interface EffectiveLimits {
  requests_per_minute: number;
  tokens_per_minute: number;
}

/**
 * A workspace's limits: each of its own overrides where set, else its plan's default from the
 * config file. Pure, so the admin API (checking that a key only narrows) and the limiter agree.
 */
export function effectiveWorkspaceLimits(plans: PlanLimitsTable, workspace: Pick<Workspace, "plan" | "limits">): EffectiveLimits {
  const plan = plans[workspace.plan];
  return {
    requests_per_minute: workspace.limits.requests_per_minute ?? plan.requests_per_minute,
    tokens_per_minute: workspace.limits.tokens_per_minute ?? plan.tokens_per_minute,
  };
}
