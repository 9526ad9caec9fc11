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
