import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./env";

/** Which gateway this is: the release (the root package.json's version) and the commit it was built from. */
export interface BuildInfo {
  version: string;
  commit: string;
}

/** Set by `pnpm build` (esbuild's `define`): a bundle carries the version and commit it was made from. */
declare const __GW_BUILD__: BuildInfo | undefined;

let known: BuildInfo | undefined;

/**
 * The bundle's own record when there is one; from a checkout, the root package.json and git (read
 * once); "unknown" for what cannot be found (a copy of the sources without .git).
 */
export function buildInfo(): BuildInfo {
  if (known) return known;
  if (typeof __GW_BUILD__ !== "undefined" && __GW_BUILD__) {
    known = __GW_BUILD__;
  } else {
    const root = repoRoot();
    known = { version: packageVersion(root), commit: gitCommit(root) };
  }
  return known;
}

function packageVersion(root: string): string {
  try {
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version?: unknown };
    return typeof version === "string" ? version : "unknown";
  } catch {
    return "unknown";
  }
}

function gitCommit(root: string): string {
  try {
    return (
      execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: root, stdio: ["ignore", "pipe", "ignore"], timeout: 2_000 })
        .toString()
        .trim() || "unknown"
    );
  } catch {
    return "unknown";
  }
}
