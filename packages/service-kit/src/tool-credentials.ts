import { findCredentialField } from "@gw/contracts";
import { GatewayError } from "@gw/errors";

/**
 * A caller-supplied credential (`api_key`, `apiKey`, `token`, …) in the body or the query is a 400
 * before anything is forwarded: the gateway adds its own, and the caller's must not travel on.
 */
export function refuseCredentials(fields: unknown, where: "body" | "query"): void {
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) return;
  const field = findCredentialField(fields);
  if (field === undefined) return;
  throw new GatewayError(
    "invalid_request",
    `Do not send \`${field}\` in the ${where}: the gateway adds its own provider credential. Authenticate with your platform key in the Authorization header.`,
    { param: field },
  );
}
