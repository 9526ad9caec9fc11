import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { existsSync } from "node:fs";
import { z } from "zod";
import { parseWith } from "./load";

/** Building blocks for each service's own environment schema (its config.ts). */
export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
export const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info");
export const secret = z.string().min(16, "must be at least 16 characters");
export const optionalUrl = (protocols: RegExp) => z.preprocess((v) => (v === "" ? undefined : v), z.url({ protocol: protocols }).optional());

export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  return parseWith(schema, env, "environment");
}

/** The repository root: the folder holding pnpm-workspace.yaml, found from this file. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "pnpm-workspace.yaml"))) {
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
  return dir;
}

export function defaultConfigPath(): string {
  return join(repoRoot(), "gateway.config.yaml");
}
