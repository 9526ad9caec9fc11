import { type Identity, isOperatorIdentity, operatorIdentity } from "@gw/contracts";
import { GatewayError } from "@gw/errors";

/**
 * `operatorIdentity` (now in @gw/contracts, re-exported here for the callers that took it from this
 * package) is what ingress's admin port signs its calls with: the operator, who may read every
 * workspace. Any other identity reads its own workspace only.
 */
export { operatorIdentity };

export const isOperator = isOperatorIdentity;

/**
 * The workspace a query reads: the operator's choice (undefined: every workspace), else the caller's
 * own. Naming another workspace is refused as `refusal` says: logs answer 404 (a record of another
 * workspace is not there for this caller), usage and statements 403.
 */
export function workspaceScope(identity: Identity, requested: string | undefined, refusal: "not_found" | "forbidden"): string | undefined {
  if (isOperator(identity)) return requested;
  if (requested === undefined || requested === identity.workspace_id) return identity.workspace_id;
  if (refusal === "not_found") throw new GatewayError("not_found", `No workspace found with id ${requested}`, { param: "workspace_id" });
  throw forbiddenWorkspace(requested);
}

export function forbiddenWorkspace(requested: string): GatewayError {
  return new GatewayError("forbidden", `This key may not read the usage of workspace ${requested}`, { param: "workspace_id" });
}
