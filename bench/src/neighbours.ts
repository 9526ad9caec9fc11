import { readdirSync, readFileSync } from "node:fs";
import { clockTicks, parseProcStat, type ProcStat } from "./process-cpu";

/**
 * Other work on the machine during a scenario. On a small shared machine a neighbour that wakes
 * often (a message broker's schedulers, another test run) moves the tails by milliseconds, so each
 * scenario says who else used the CPU while it ran.
 */

/** What the neighbour report needs of a process. */
export type ProcessSample = Pick<ProcStat, "name" | "ppid" | "cpuTicks">;

/** Every process, by pid, from /proc; empty where /proc is missing. */
export type ProcessTable = Map<number, ProcessSample>;

/** The servers the mesh itself uses: busy by design, reported apart from neighbours. */
const infrastructure = new Set(["redis-server", "nats-server", "postgres"]);

export function readProcessTable(procRoot = "/proc"): ProcessTable {
  const table: ProcessTable = new Map();
  let entries: string[];
  try {
    entries = readdirSync(procRoot);
  } catch {
    return table;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      table.set(Number(entry), parseProcStat(readFileSync(`${procRoot}/${entry}/stat`, "utf8")));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return table;
}

export interface CpuUser {
  pid: number;
  name: string;
  /** CPU used over the interval, as a share of one core (0.05 = 5 %). */
  core: number;
}

export interface NeighbourReport {
  /** Processes outside the benchmark and the mesh's servers, busiest first. */
  neighbours: CpuUser[];
  /** Redis, NATS and Postgres, which the mesh itself uses. */
  infrastructure: CpuUser[];
  /** Kernel threads (children of kthreadd): partly the benchmark's own I/O, so they never warn. */
  kernel: CpuUser[];
}

/** Linux's kthreadd, the parent of every kernel thread. */
const KTHREADD = 2;

/** Whether `pid` is `root` or descends from it, in the `after` table. */
function descendsFrom(pid: number, root: number, table: ProcessTable): boolean {
  for (let at = pid, hops = 0; at > 1 && hops < 64; hops++) {
    if (at === root) return true;
    const sample = table.get(at);
    if (!sample) return false;
    at = sample.ppid;
  }
  return false;
}

/**
 * Who used at least `minCore` of a core between two tables, `elapsedMs` apart, leaving out the
 * benchmark (`self`) and everything it started: the upstream, the services, Portkey.
 */
export function cpuUsers(
  before: ProcessTable,
  after: ProcessTable,
  elapsedMs: number,
  self: number,
  minCore = 0.02,
  ticksPerSecond = clockTicks(),
): NeighbourReport {
  const report: NeighbourReport = { neighbours: [], infrastructure: [], kernel: [] };
  if (elapsedMs <= 0) return report;
  for (const [pid, now] of after) {
    if (descendsFrom(pid, self, after)) continue;
    const then = before.get(pid);
    // A pid reused by a new process: count its whole time, which all falls within the interval.
    const used = then && then.name === now.name ? now.cpuTicks - then.cpuTicks : now.cpuTicks;
    const core = (used * 1000) / ticksPerSecond / elapsedMs;
    if (core < minCore) continue;
    const user = { pid, name: now.name, core: Math.round(core * 1000) / 1000 };
    const kind = now.ppid === KTHREADD || pid === KTHREADD ? "kernel" : infrastructure.has(now.name) ? "infrastructure" : "neighbours";
    report[kind].push(user);
  }
  for (const list of [report.neighbours, report.infrastructure, report.kernel]) list.sort((a, b) => b.core - a.core);
  return report;
}

/** The note printed under a scenario's tables when neighbours used more than `warnCore` in all. */
export function neighbourNote(scenario: string, report: NeighbourReport, warnCore = 0.05): string | undefined {
  const total = report.neighbours.reduce((sum, u) => sum + u.core, 0);
  if (total < warnCore) return undefined;
  const list = report.neighbours
    .slice(0, 4)
    .map((u) => `${u.name} (pid ${u.pid}) ${(u.core * 100).toFixed(1)} %`)
    .join(", ");
  return `note: during ${scenario}, other processes used ${(total * 100).toFixed(1)} % of a core (${list}); tails may be skewed`;
}
