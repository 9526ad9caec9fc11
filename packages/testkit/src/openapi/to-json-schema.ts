import { isObject } from "./spec-files";

/**
 * Turns OpenAPI `components.schemas` into plain JSON Schema 2020-12 `$defs`, so ajv validates what
 * the document means rather than tripping over OpenAPI dialect:
 * - `$ref: "#/components/schemas/X"` → `#/$defs/X` (the defs are registered as one schema);
 * - `nullable: true` (OpenAPI 3.0, still used ~100 times in OpenAI's 3.1 document) → `anyOf [it, null]`,
 *   which also covers nullable enums and nullable `$ref`s, where adding "null" to `type` would not;
 * - `discriminator` is only a hint in OpenAPI: the `oneOf`/`anyOf` it sits on already decides, and
 *   ajv's own discriminator support rejects `mapping`, so it is dropped;
 * - `$recursiveRef` (draft 2019-09, used by OpenAI's CompoundFilter) → a plain `$ref` to the
 *   component that carries the matching `$recursiveAnchor`;
 * - 3.0 boolean `exclusiveMinimum`/`exclusiveMaximum` → the numeric 2020-12 form (Tavily is 3.0.3);
 * - `x-*` extensions and the 3.0 `example` keyword are dropped (annotations only).
 * Property *names* are never rewritten: maps of schemas are walked as maps.
 */
export function toJsonSchemaDefs(schemas: Record<string, unknown>): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(schemas)) defs[name] = convert(schema, name);
  return defs;
}

const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
const SCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
const SCHEMA_VALUES = new Set([
  "items",
  "additionalProperties",
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
  "additionalItems",
]);
const DROPPED = new Set(["discriminator", "example", "nullable", "$recursiveAnchor", "xml", "externalDocs"]);

function convert(schema: unknown, component: string): unknown {
  if (!isObject(schema)) return schema; // boolean schemas and malformed leaves pass through
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED.has(key) || key.startsWith("x-")) continue;
    if (key === "$ref" && typeof value === "string") {
      out.$ref = value.replace(/^#\/components\/schemas\//, "#/$defs/");
    } else if (key === "$recursiveRef") {
      out.$ref = `#/$defs/${component}`;
    } else if (SCHEMA_MAPS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(v, component)]));
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      out[key] = value.map((v) => convert(v, component));
    } else if (SCHEMA_VALUES.has(key)) {
      out[key] = Array.isArray(value) ? value.map((v) => convert(v, component)) : convert(value, component);
    } else {
      out[key] = value;
    }
  }
  fixExclusiveBound(out, "exclusiveMinimum", "minimum");
  fixExclusiveBound(out, "exclusiveMaximum", "maximum");
  if (schema.nullable !== true) return out;
  // Keep annotations on the outside so error paths still read naturally.
  const { description, title, default: dflt, deprecated, ...rest } = out;
  const wrapped: Record<string, unknown> = { anyOf: [rest, { type: "null" }] };
  if (Object.keys(rest).length === 0) return out; // `{nullable:true}` alone already accepts anything
  if (description !== undefined) wrapped.description = description;
  if (title !== undefined) wrapped.title = title;
  if (dflt !== undefined) wrapped.default = dflt;
  if (deprecated !== undefined) wrapped.deprecated = deprecated;
  return wrapped;
}

function fixExclusiveBound(s: Record<string, unknown>, exclusive: string, inclusive: string): void {
  if (typeof s[exclusive] !== "boolean") return;
  if (s[exclusive] === true && typeof s[inclusive] === "number") {
    s[exclusive] = s[inclusive];
    delete s[inclusive];
  } else {
    delete s[exclusive];
  }
}
