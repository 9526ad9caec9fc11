import { CallOutcome } from "@gw/contracts";

/**
 * A service's report of what a call used (the `x-gw-outcome` header or trailer), as ingress and the
 * job workers read it: one that is missing or malformed is dropped, never trusted in part.
 */
export function readCallOutcome(header: string | string[] | undefined): CallOutcome | undefined {
  if (typeof header !== "string") return undefined;
  try {
    const parsed = CallOutcome.safeParse(JSON.parse(header));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The report as ingress reads it on every request: parsed, shaped as an object, but its fields
 * unchecked, because the usage record carrying it is checked whole when it is published (a check
 * per request on the request path would be a second one). UsagePublisher sends a record the bus
 * refuses again without its outcome, so a malformed report costs the report, not the record.
 */
export function parseCallOutcome(header: string | undefined): CallOutcome | undefined {
  if (header === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(header);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as CallOutcome) : undefined;
  } catch {
    return undefined;
  }
}
