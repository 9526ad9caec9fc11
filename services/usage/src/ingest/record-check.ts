import { Ajv, type ErrorObject } from "ajv";
import { UsageRecord } from "@gw/contracts";
import { z } from "zod";

/**
 * The check every usage record meets before the ledger keeps it: UsageRecord's own rules, compiled
 * by Ajv from the JSON Schema zod writes for it, so the contract stays defined once. It runs once per
 * request the gateway serves, and a compiled check costs about a quarter of zod's parse (3.3 against
 * 0.9 µs a record, measured in a loop: bench/README.md), whose copy of each record the collector also
 * had to reclaim. Like zod's parse it drops unknown fields (`removeAdditional`), and like zod it counts
 * a string's length in code points.
 */
const { $schema: _draft, ...schema } = z.toJSONSchema(UsageRecord, { target: "draft-7" });

function compiled(codePoints: boolean) {
  // Ajv 8 calls `unicode: false` deprecated and says so on the console; the other compilation, of
  // the same schema, still reports anything else Ajv has to say.
  const byUnits = { unicode: false, logger: false } as const;
  const ajv = new Ajv({ removeAdditional: true, allErrors: false, strict: true, ...(codePoints ? {} : byUnits) });
  // Zod marks `startsWith` with a format of its own beside the pattern that does the checking.
  ajv.addFormat("starts_with", true);
  return ajv.compile<UsageRecord>(schema);
}

/**
 * Two compilations, as zod counts: lengths in UTF-16 units first, which never exceed the code
 * points, so a record that passes is valid; code points only when that check fails. Counting code
 * points in every string of every record was most of the check's cost: 390 against 90 ns a record in
 * a loop, and a fifth of it in the live bench's profile. That holds while no minimum length is above
 * 1 (a string has at least one unit if and only if it has at least one code point), checked here.
 */
function minLengths(node: unknown): number[] {
  if (typeof node !== "object" || node === null) return [];
  return Object.entries(node).flatMap(([name, value]) => (name === "minLength" && typeof value === "number" ? [value] : minLengths(value)));
}
if (minLengths(schema).some((n) => n > 1)) throw new Error("record-check: a minLength above 1 needs code points counted first");
const validateByUnits = compiled(false);
const validate = compiled(true);

/**
 * Whether a record as it came off the bus is one the ledger can keep: a valid one has lost any
 * unknown fields, in place. After a false, usageRecordErrors() says why.
 */
export function isUsageRecord(raw: unknown): raw is UsageRecord {
  return validateByUnits(raw) || validate(raw);
}

/** What the last failed isUsageRecord found, as Ajv reports it (the first error; it stops there). */
export function usageRecordErrors(): ErrorObject[] {
  return validate.errors ?? [];
}
