import { existsSync, readFileSync } from "node:fs";
import { isAbsolute } from "node:path";
import { fileURLToPath } from "node:url";

/** The vendored OpenAPI documents, with their sources and licences (see its README). */
const vendored = fileURLToPath(new URL("../../openapi/", import.meta.url));

/** A vendored document by file name, or any document by absolute path (a test's own). */
export function referenceFilePath(fileName: string): string {
  const path = isAbsolute(fileName) ? fileName : `${vendored}${fileName}`;
  if (!existsSync(path)) throw new Error(`cannot find the OpenAPI document ${path}`);
  return path;
}

/** Returns `components.schemas` of an OpenAPI document (3.0 or 3.1). */
export function loadComponentSchemas(fileName: string): Record<string, unknown> {
  const doc: unknown = JSON.parse(readFileSync(referenceFilePath(fileName), "utf8"));
  const schemas = isObject(doc) && isObject(doc.components) ? doc.components.schemas : undefined;
  if (!isObject(schemas)) throw new Error(`${fileName} has no components.schemas`);
  return schemas;
}

/**
 * The inline JSON response schemas of every operation, named `"<METHOD> <path> <status>"`
 * (e.g. `"POST /search 200"`): Tavily's document defines most answers there, not as components.
 */
export function loadResponseSchemas(fileName: string): Record<string, unknown> {
  const doc: unknown = JSON.parse(readFileSync(referenceFilePath(fileName), "utf8"));
  const out: Record<string, unknown> = {};
  const paths = isObject(doc) && isObject(doc.paths) ? doc.paths : {};
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    for (const [method, operation] of Object.entries(item)) {
      const responses = isObject(operation) && isObject(operation.responses) ? operation.responses : {};
      for (const [status, response] of Object.entries(responses)) {
        const content = isObject(response) && isObject(response.content) ? response.content["application/json"] : undefined;
        if (isObject(content) && content.schema !== undefined) out[`${method.toUpperCase()} ${path} ${status}`] = content.schema;
      }
    }
  }
  return out;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
