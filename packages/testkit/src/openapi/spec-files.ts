import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The vendored OpenAPI documents live outside the repo, in `<repo>/../shared/reference/`, because
 * they are shared with other checkouts. `GW_SHARED_DIR` overrides that location (for CI or a
 * worktree placed elsewhere); it may point at the `shared` folder or straight at `reference`.
 */
export function referenceFilePath(fileName: string): string {
  const candidates: string[] = [];
  const fromEnv = process.env.GW_SHARED_DIR;
  if (fromEnv) candidates.push(join(fromEnv, "reference", fileName), join(fromEnv, fileName));
  const root = findRepoRoot(dirname(fileURLToPath(import.meta.url)));
  if (root) candidates.push(join(root, "..", "shared", "reference", fileName));
  const hit = candidates.find((p) => existsSync(p));
  if (hit) return hit;
  throw new Error(
    `cannot find ${fileName}; looked in:\n  ${candidates.join("\n  ") || "(no repo root found)"}\n` +
      "set GW_SHARED_DIR to the folder that holds reference/",
  );
}

/** The repo root is the nearest ancestor holding pnpm-workspace.yaml (package folders do not). */
function findRepoRoot(start: string): string | undefined {
  let dir = resolve(start);
  for (;;) {
    if (existsSync(join(dir, "pnpm-workspace.yaml"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
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
