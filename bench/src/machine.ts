import { execFileSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { fileURLToPath } from "node:url";

/** The repository root, from this file's place in bench/src. */
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryMB: number;
  platform: string;
  node: string;
  commit: string;
  /** Uncommitted changes were present: the numbers may not belong to `commit` alone. */
  dirty: boolean;
}

export function describeMachine(): MachineInfo {
  const list = cpus();
  return {
    cpuModel: list[0]?.model.trim() ?? "unknown",
    cores: list.length,
    memoryMB: Math.round(totalmem() / 2 ** 20),
    platform: `${process.platform}-${process.arch}`,
    node: process.version,
    commit: git(["rev-parse", "--short", "HEAD"]) ?? "unknown",
    dirty: (git(["status", "--porcelain"]) ?? "") !== "",
  };
}

function git(args: string[]): string | undefined {
  try {
    return execFileSync("git", args, { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}
