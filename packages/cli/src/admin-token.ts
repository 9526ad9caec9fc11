import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The file `pnpm start` and `pnpm start:mesh` keep a generated admin token in (services/embedded/src/secret-file.ts). */
export const adminTokenFileName = "admin-token";

export type AdminTokenSource = { token: string; from: "env" } | { token: string; from: "file"; path: string } | { token: undefined; problem: string };

/**
 * The admin token: GATEWAY_ADMIN_TOKEN when set, as before; otherwise the one a gateway generated
 * into its data folder (GATEWAY_DATA_DIR, default `.data/` at the repo root), so the quick start
 * works without copying a secret around.
 */
export function resolveAdminToken(
  env: { GATEWAY_ADMIN_TOKEN?: string; GATEWAY_DATA_DIR?: string },
  read: (path: string) => string = (path) => readFileSync(path, "utf8"),
): AdminTokenSource {
  if (env.GATEWAY_ADMIN_TOKEN) return { token: env.GATEWAY_ADMIN_TOKEN, from: "env" };
  const path = join(env.GATEWAY_DATA_DIR || join(repoRoot(), ".data"), adminTokenFileName);
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const problem =
      code === "ENOENT"
        ? `GATEWAY_ADMIN_TOKEN is not set and ${path} does not exist (pnpm start writes it on its first start unless it was given GATEWAY_ADMIN_TOKEN; then set the same here)`
        : `GATEWAY_ADMIN_TOKEN is not set and ${path} cannot be read (${code ?? (err as Error).message})`;
    return { token: undefined, problem };
  }
  const token = text.trim();
  if (!token) return { token: undefined, problem: `GATEWAY_ADMIN_TOKEN is not set and ${path} is empty` };
  return { token, from: "file", path };
}

/** The folder holding pnpm-workspace.yaml, as @gw/config finds it (the CLI does not depend on it). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "pnpm-workspace.yaml"))) {
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
  return dir;
}
