import Ajv2020 from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { loadComponentSchemas, loadResponseSchemas } from "./spec-files";
import { toJsonSchemaDefs } from "./to-json-schema";

export interface ValidationResult {
  valid: boolean;
  /** Human-readable, one problem per line; empty when valid. */
  errors: string;
}

export interface SpecValidator {
  validate(schemaName: string, value: unknown): ValidationResult;
  assert(schemaName: string, value: unknown): void;
}

/** Lines of error text kept: anyOf/oneOf failures fan out into many near-duplicates. */
const MAX_ERROR_LINES = 30;

/**
 * A validator over `components.schemas` of one vendored OpenAPI file. Nothing is read or compiled
 * until the first call (loading OpenAI's 1400-schema document costs ~100 ms), and each schema is
 * compiled once. A spec is one ajv instance holding all its schemas as `$defs` of a single schema,
 * so cross-references resolve and compiled sub-schemas are shared between entry points.
 */
export function createSpecValidator(fileName: string, label: string): SpecValidator {
  const specId = `https://gw.test/openapi/${fileName}`;
  let ajv: Ajv2020 | undefined;
  let names: Set<string> | undefined;
  const compiled = new Map<string, ValidateFunction>();

  function getValidator(schemaName: string): ValidateFunction {
    const cached = compiled.get(schemaName);
    if (cached) return cached;
    if (!ajv || !names) {
      // Operations' inline answers too, named "<METHOD> <path> <status>" (components win a clash).
      const defs = toJsonSchemaDefs({ ...loadResponseSchemas(fileName), ...loadComponentSchemas(fileName) });
      names = new Set(Object.keys(defs));
      ajv = createAjv();
      ajv.addSchema({ $id: specId, $defs: defs });
    }
    if (!names.has(schemaName)) {
      throw new Error(`${label} OpenAPI (${fileName}) has no components.schemas.${schemaName}`);
    }
    const pointer = encodeURIComponent(schemaName.replaceAll("~", "~0").replaceAll("/", "~1"));
    const fn = ajv.compile({ $ref: `${specId}#/$defs/${pointer}` });
    compiled.set(schemaName, fn);
    return fn;
  }

  function validate(schemaName: string, value: unknown): ValidationResult {
    const fn = getValidator(schemaName);
    if (fn(value)) return { valid: true, errors: "" };
    return { valid: false, errors: formatErrors(fn.errors ?? []) };
  }

  return {
    validate,
    assert(schemaName, value) {
      const result = validate(schemaName, value);
      if (result.valid) return;
      const preview = JSON.stringify(value)?.slice(0, 600) ?? String(value);
      throw new Error(`value does not match ${label} schema ${schemaName}:\n${result.errors}\nvalue: ${preview}`);
    },
  };
}

function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    strict: false, // OpenAPI documents carry keywords ajv does not know; they are annotations
    allErrors: true, // report every mismatch at once instead of one per test run
    validateSchema: false, // the vendored documents are trusted; meta-validating 1400 schemas is slow
    logger: false,
  });
  addFormats(ajv);
  // OpenAPI-specific formats: type checks already cover them, so accept any value of that type.
  for (const f of ["int32", "int64", "unixtime"]) ajv.addFormat(f, { type: "number", validate: () => true });
  for (const f of ["float", "double"]) ajv.addFormat(f, { type: "number", validate: () => true });
  for (const f of ["binary", "byte", "password"]) ajv.addFormat(f, { type: "string", validate: () => true });
  return ajv;
}

function formatErrors(errors: ErrorObject[]): string {
  const lines = new Set<string>();
  for (const e of errors) {
    const where = e.instancePath || "(root)";
    let detail = "";
    if (e.keyword === "enum") detail = ` ${JSON.stringify(e.params.allowedValues)}`;
    if (e.keyword === "additionalProperties") detail = ` (${String(e.params.additionalProperty)})`;
    lines.add(`${where}: ${e.message ?? e.keyword}${detail}  [schema ${e.schemaPath}]`);
  }
  const all = [...lines];
  const shown = all.slice(0, MAX_ERROR_LINES);
  if (all.length > shown.length) shown.push(`… and ${all.length - shown.length} more`);
  return shown.join("\n");
}

const openai = createSpecValidator("openai-openapi.json", "OpenAI");

/** Validates `value` against `components.schemas[schemaName]` of OpenAI's official OpenAPI document. */
export function validateOpenAI(schemaName: string, value: unknown): ValidationResult {
  return openai.validate(schemaName, value);
}

/** Like validateOpenAI, but throws an Error listing every mismatch. */
export function assertOpenAI(schemaName: string, value: unknown): void {
  openai.assert(schemaName, value);
}
