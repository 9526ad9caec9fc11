import { describe, expect, it } from "vitest";
import { accumulateCpu, parseProcStat, processCpuMicros } from "./process-cpu";

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
});

describe("accumulateCpu", () => {
  it("adds each process's delta and skips processes missing from the first reading", () => {
    const total = { bench: 10 };
    accumulateCpu(total, { bench: 100, ingress: 50 }, { bench: 130, ingress: 80, jobs: 5 });
    expect(total).toEqual({ bench: 40, ingress: 30 });
  });
});
