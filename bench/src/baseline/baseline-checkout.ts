import { execFile, execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { meshServices } from "../../../services/embedded/src/mesh-processes";
import type { BenchGateway } from "../gateway/start-gateway";
import type { RequestTarget } from "../http-client";

/** Another checkout of this repository, as --baseline names it. */
export interface BaselineCheckout {
  /** Absolute path. */
  dir: string;
  /** `git -C dir rev-parse --short HEAD`, or "unknown" outside git. */
  commit: string;
  /** Uncommitted changes were present: the numbers may not belong to `commit` alone. */
  dirty: boolean;
}

/** The baseline's running mesh, as the scenarios see it. */
export interface BaselineMesh extends BaselineCheckout {
  gateway: BenchGateway;
  /** Its four services' pids, named `baseline:<service>` so they never mix with this tree's. */
  processes: Record<string, number>;
  /** The benchmark's chat request through the baseline mesh. */
  chat: RequestTarget;
}

export const baselineProcessPrefix = "baseline:";

/** Runs git in `dir`; undefined when it fails (not a checkout, no git). */
export type GitRunner = (dir: string, args: string[]) => string | undefined;

const runGit: GitRunner = (dir, args) => {
  try {
    return execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
};

export const installRecipe = "git worktree add --detach DIR <commit> && (cd DIR && pnpm install --frozen-lockfile)";

/**
 * Checks that `dir` looks like an installed checkout of this repository before anything starts, so
 * a typo or a missing install fails in a second with the fix, not after a 90 s mesh time-out.
 */
export function readBaselineCheckout(raw: string, git: GitRunner = runGit): BaselineCheckout {
  const dir = resolve(raw);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new Error(`--baseline: ${dir} is not a directory (make one: ${installRecipe})`);
  // The usage and console services came later: a checkout from before them runs without them.
  const missing = meshServices
    .filter((name) => name !== "usage" && name !== "console")
    .map((name) => join("services", name, "src", "main.ts"))
    .filter((file) => !existsSync(join(dir, file)));
  if (!existsSync(join(dir, "pnpm-workspace.yaml")) || missing.length > 0) {
    throw new Error(`--baseline: ${dir} is not a checkout of this repository (missing ${missing[0] ?? "pnpm-workspace.yaml"})`);
  }
  // The services start with `node --import tsx` from the checkout's own node_modules.
  if (!existsSync(join(dir, "node_modules", "tsx"))) throw new Error(`--baseline: ${dir} is not installed: run pnpm install --frozen-lockfile there`);
  return {
    dir,
    commit: git(dir, ["rev-parse", "--short", "HEAD"]) ?? "unknown",
    dirty: (git(dir, ["status", "--porcelain"]) ?? "") !== "",
  };
}

/**
 * Builds the checkout's bundles with its own build script and dependencies (its `pnpm build`), so
 * its services can run as the images run them (--baseline-built).
 */
export async function buildBaselineCheckout(checkout: BaselineCheckout): Promise<void> {
  const script = join(checkout.dir, "scripts", "build.ts");
  if (!existsSync(script)) throw new Error(`--baseline-built: ${checkout.dir} has no scripts/build.ts to build its services with`);
  await promisify(execFile)(join(checkout.dir, "node_modules", ".bin", "tsx"), [script], { cwd: checkout.dir, maxBuffer: 16 << 20 });
}

/** One line for the run's header, beside this tree's commit. */
export function describeBaseline(checkout: BaselineCheckout): string {
  return `baseline ${checkout.commit}${checkout.dirty ? " (with uncommitted changes)" : ""} at ${checkout.dir}`;
}

/** The pids of a mesh's services under the names the baseline's CPU readings use. */
export function baselineProcesses(pids: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [`${baselineProcessPrefix}${name}`, pid]));
}
