import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

export interface ProcStat {
  /** The command name (field 2, without its parentheses). */
  name: string;
  /** The parent's pid. */
  ppid: number;
  /** User plus system CPU time, in clock ticks. */
  cpuTicks: number;
  /** Resident set size, in pages. */
  rssPages: number;
}

/**
 * Parses /proc/<pid>/stat. The command name (field 2) is in parentheses and may itself contain
 * spaces or parentheses, so the fields are counted from the last ")".
 */
export function parseProcStat(text: string): ProcStat {
  const start = text.indexOf("(");
  const end = text.lastIndexOf(")");
  if (start < 0 || end < start) throw new Error("not a /proc/<pid>/stat line");
  // After ")" the fields start at 3 (state): ppid is field 4, utime 14, stime 15, rss 24.
  const fields = text
    .slice(end + 2)
    .trim()
    .split(/\s+/);
  const at = (field: number) => Number(fields[field - 3]);
  const ppid = at(4);
  const utime = at(14);
  const stime = at(15);
  const rss = at(24);
  if (![ppid, utime, stime, rss].every(Number.isFinite)) throw new Error("malformed /proc/<pid>/stat line");
  return { name: text.slice(start + 1, end), ppid, cpuTicks: utime + stime, rssPages: rss };
}

let ticksPerSecond: number | undefined;
export function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100; // the Linux value on every common architecture
    }
  }
  return ticksPerSecond;
}

/**
 * Total CPU time of another process in µs: the sum of its threads' run times in nanoseconds
 * (/proc/<pid>/task/<tid>/schedstat, field 1), so that a block of a hundred requests is not read in
 * 10 ms steps (its ±10 ms per process was ±100 µs per request per block); /proc/<pid>/stat's ticks
 * where schedstat cannot be read. Each process is read one way for good, decided at its first
 * reading: a difference between the two ways would otherwise land in one block. A thread that has
 * exited drops out of the sum (Node's threads, libuv's pool and V8's helpers, live as long as the
 * process). Undefined where /proc is missing.
 */
export function processCpuMicros(pid: number): number | undefined {
  let bySchedstat = readsSchedstat.get(pid);
  if (bySchedstat === undefined) {
    bySchedstat = (threadsCpuMicros(pid) ?? 0) > 0;
    readsSchedstat.set(pid, bySchedstat);
  }
  return bySchedstat ? threadsCpuMicros(pid) : ticksCpuMicros(pid);
}

const readsSchedstat = new Map<number, boolean>();

function threadsCpuMicros(pid: number): number | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let nanos = 0;
  for (const tid of tids) {
    try {
      nanos += schedstatNanos(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8"));
    } catch {
      // The thread ended between the listing and its reading: its time is gone from the sum either way.
    }
  }
  return nanos / 1000;
}

/** The first field of a schedstat line: nanoseconds spent running. */
export function schedstatNanos(text: string): number {
  const nanos = Number(text.slice(0, text.indexOf(" ")));
  if (!Number.isFinite(nanos) || nanos < 0 || text.indexOf(" ") <= 0) throw new Error("malformed schedstat line");
  return nanos;
}

function ticksCpuMicros(pid: number): number | undefined {
  try {
    const { cpuTicks } = parseProcStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
    return (cpuTicks * 1_000_000) / clockTicks();
  } catch {
    return undefined;
  }
}

/** CPU time of this process in µs, at µs resolution. */
export function ownCpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** CPU µs per named process; "bench" is this process (the load generator). */
export type CpuReading = Record<string, number>;

export function readCpu(pids: Readonly<Record<string, number>>): CpuReading {
  const reading: CpuReading = { bench: ownCpuMicros() };
  for (const [name, pid] of Object.entries(pids)) {
    const micros = processCpuMicros(pid);
    if (micros !== undefined) reading[name] = micros;
  }
  return reading;
}

/** Adds `after − before` into `total`, process by process. */
export function accumulateCpu(total: CpuReading, before: CpuReading, after: CpuReading): void {
  for (const [name, value] of Object.entries(after)) {
    const start = before[name];
    if (start !== undefined) total[name] = (total[name] ?? 0) + value - start;
  }
}
