/** A JSON Schema (2020-12, OpenAPI 3.1's dialect) as plain data. */
export type JsonSchema = { [key: string]: unknown };

const SAFE = Number.MAX_SAFE_INTEGER;

/**
 * What zod emits that says nothing to a reader, removed or written plainly: each component's own
 * `$schema` and `$id` (the document names the dialect once), the ±2^53 bounds of `.int()`,
 * `propertyNames: {type: string}` on records (JSON keys are strings), `additionalProperties: {}`
 * written as `true`, and a union nested in a nullable union flattened into one `anyOf`.
 * `additionalProperties: false` goes from answers: an answer may gain fields, and a client that
 * refused unknown ones would break on the next release.
 */
export function tidy(schema: unknown, answer: boolean): unknown {
  if (Array.isArray(schema)) return schema.map((s) => tidy(s, answer));
  if (!isObject(schema)) return schema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$schema" || key === "$id") continue;
    if (key === "maximum" && value === SAFE) continue;
    if (key === "minimum" && value === -SAFE) continue;
    if (key === "propertyNames" && isObject(value) && value.type === "string" && Object.keys(value).length === 1) continue;
    if (key === "additionalProperties" && isObject(value) && Object.keys(value).length === 0) {
      out[key] = true;
      continue;
    }
    if (key === "additionalProperties" && value === false && answer) continue;
    out[key] = key === "properties" && isObject(value) ? mapValues(value, (v) => tidy(v, answer)) : tidy(value, answer);
  }
  if (Array.isArray(out.anyOf)) out.anyOf = out.anyOf.flatMap((branch) => (isBareUnion(branch) ? branch.anyOf : [branch]));
  return out;
}

function isBareUnion(s: unknown): s is { anyOf: unknown[] } {
  return isObject(s) && Array.isArray(s.anyOf) && Object.keys(s).length === 1;
}

function mapValues(o: JsonSchema, f: (v: unknown) => unknown): JsonSchema {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));
}

export function isObject(v: unknown): v is JsonSchema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
