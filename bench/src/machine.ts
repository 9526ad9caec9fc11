import { execFileSync } from "node:child_process";
import { cpus, loadavg, totalmem } from "node:os";
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
  /** 1, 5 and 15 minute load averages when the run began: other work on the machine skews tails. */
  loadAverage: number[];
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
    loadAverage: currentLoadAverage(),
  };
}

export function currentLoadAverage(): number[] {
  return loadavg().map((x) => Math.round(x * 100) / 100);
}

function git(args: string[]): string | undefined {
  try {
    return execFileSync("git", args, { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}
