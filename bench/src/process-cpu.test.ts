import { describe, expect, it } from "vitest";
import { accumulateCpu, parseProcStat, processCpuMicros, schedstatNanos } from "./process-cpu";

// A real line's shape: field 4 (ppid) = 1, fields 14/15 (utime/stime) = 250/50, field 24 (rss) = 12345.
const line = (comm: string) =>
  `4242 (${comm}) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 11 0 777 1234567 12345 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0`;

describe("parseProcStat", () => {
  it("reads user + system ticks and rss", () => {
    expect(parseProcStat(line("node"))).toEqual({ name: "node", ppid: 1, cpuTicks: 300, rssPages: 12345 });
  });

  it("is not fooled by spaces or parentheses in the command name", () => {
    expect(parseProcStat(line("node (x) y z"))).toEqual({ name: "node (x) y z", ppid: 1, cpuTicks: 300, rssPages: 12345 });
  });

  it("rejects text that is not a stat line", () => {
    expect(() => parseProcStat("garbage")).toThrow();
  });
});

describe("processCpuMicros", () => {
  it("reads a live process and gives undefined for a missing one", () => {
    if (process.platform !== "linux") return;
    expect(processCpuMicros(process.pid)).toBeGreaterThanOrEqual(0);
    expect(processCpuMicros(2 ** 30)).toBeUndefined();
  });

  it("reads finer than the 10 ms ticks of /proc/<pid>/stat", () => {
    if (process.platform !== "linux") return;
    // Ticks would only ever give multiples of 10,000 µs; the threads' nanoseconds almost never do.
    let work = 0;
    const readings = Array.from({ length: 5 }, () => {
      for (let i = 0; i < 100_000; i++) work += i;
      return processCpuMicros(process.pid) ?? 0;
    });
    expect(work).toBeGreaterThan(0);
    expect(readings.some((micros) => micros % 10_000 !== 0)).toBe(true);
  });
});

describe("schedstatNanos", () => {
  it("reads the run time, the first of schedstat's three fields", () => {
    expect(schedstatNanos("699577123 4567 12\n")).toBe(699_577_123);
  });

  it("rejects a line that is not one", () => {
    expect(() => schedstatNanos("garbage")).toThrow();
    expect(() => schedstatNanos("")).toThrow();
  });
});

describe("accumulateCpu", () => {
  it("adds each process's delta and skips processes missing from the first reading", () => {
    const total = { bench: 10 };
    accumulateCpu(total, { bench: 100, ingress: 50 }, { bench: 130, ingress: 80, jobs: 5 });
    expect(total).toEqual({ bench: 40, ingress: 30 });
  });
});
