import { CallOutcome, parseCallOutcomeText } from "@gw/contracts";

/**
 * A service's report of what a call used (the `x-gw-outcome` header or trailer), as the job workers
 * read it: one that is missing or malformed is dropped, never trusted in part.
 */
export function readCallOutcome(header: string | string[] | undefined): CallOutcome | undefined {
  if (typeof header !== "string") return undefined;
  const parsed = CallOutcome.safeParse(parseCallOutcomeText(header));
  return parsed.success ? parsed.data : undefined;
}

/**
 * The report as ingress reads it on every request: shaped, but its fields unchecked, because the
 * usage record carrying it is checked whole by the ledger (a check per request on the request path
 * would be a second one). The ledger keeps a record whose report is malformed without the report,
 * so a bad report costs the report, not the record.
 */
export function parseCallOutcome(header: string | undefined): CallOutcome | undefined {
  return parseCallOutcomeText(header);
}
