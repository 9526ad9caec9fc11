import { readFileSync } from "node:fs";

/** VmRSS from a /proc/<pid>/status text, in kB (the kernel's unit there, 1024 bytes). */
export function parseVmRssKb(status: string): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!match?.[1]) throw new Error("no VmRSS line in /proc/<pid>/status");
  return Number(match[1]);
}

/** Resident memory of a process in kB; undefined where /proc is missing or the process is gone. */
export function processRssKb(pid: number): number | undefined {
  try {
    return parseVmRssKb(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return undefined;
  }
}

/** kB of resident memory per named process; "bench" is this process (the load generator). */
export type RssReading = Record<string, number>;

export function readRss(pids: Readonly<Record<string, number>>): RssReading {
  const reading: RssReading = {};
  for (const [name, pid] of Object.entries({ bench: process.pid, ...pids })) {
    const kb = processRssKb(pid);
    if (kb !== undefined) reading[name] = kb;
  }
  return reading;
}

/** Keeps the larger value per process. */
export function mergePeak(peak: RssReading, reading: RssReading): void {
  for (const [name, kb] of Object.entries(reading)) peak[name] = Math.max(peak[name] ?? 0, kb);
}

export interface RssSampler {
  /** Takes one last reading and returns each process's peak since the start. */
  stop(): RssReading;
}

/**
 * Reads every `intervalMs` while load runs: RSS moves with garbage collection, so one reading at
 * the end could land just after a collection and understate the memory the load needed.
 */
export function sampleRss(pids: Readonly<Record<string, number>>, intervalMs = 500): RssSampler {
  const peak: RssReading = {};
  mergePeak(peak, readRss(pids));
  const timer = setInterval(() => mergePeak(peak, readRss(pids)), intervalMs);
  return {
    stop() {
      clearInterval(timer);
      mergePeak(peak, readRss(pids));
      return peak;
    },
  };
}
