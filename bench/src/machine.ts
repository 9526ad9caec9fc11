import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
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
  /**
   * How an idle CPU waits for work (Linux cpuidle), when the machine says: a CPU that halts at once
   * must be woken for each hop's reply, which on a virtual machine costs tens of µs per wake-up.
   */
  cpuIdle?: string;
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
    cpuIdle: describeCpuIdle(readSys("devices/system/cpu/cpuidle/current_driver"), readSys("module/haltpoll/parameters/guest_halt_poll_ns")),
  };
}

/** The cpuidle driver, and for a virtual machine's `haltpoll` how long it polls before halting. */
export function describeCpuIdle(driver: string | undefined, haltPollNs: string | undefined): string | undefined {
  if (!driver || driver === "none") return undefined;
  if (driver === "haltpoll" && haltPollNs !== undefined) {
    return Number(haltPollNs) === 0 ? "haltpoll, halts at once (no polling)" : `haltpoll, polls up to ${haltPollNs} ns before halting`;
  }
  return driver;
}

function readSys(path: string): string | undefined {
  try {
    return readFileSync(`/sys/${path}`, "utf8").trim();
  } catch {
    return undefined;
  }
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
