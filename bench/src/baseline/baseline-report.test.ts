import { describe, expect, it } from "vitest";
import type { LatencySummary } from "../histogram";
import { renderTable } from "../report";
import { baselineTables, compareWithBaseline } from "./baseline-report";

const summary = (p50: number, p90: number, p99: number): LatencySummary => ({ count: 2000, p50, p90, p99, max: p99 + 1, mean: p50 + 0.01 });

const latency = { direct: summary(0.2, 0.25, 0.4), gateway: summary(1.1, 1.3, 2.0), baseline: summary(1.0, 1.25, 2.3) };
const cpu = {
  direct: { bench: 40, upstream: 30, inference: 1, tools: 0, jobs: 0, ingress: 2, "baseline:inference": 1, "baseline:ingress": 1 },
  // The gateway's usage service counts; the baseline (a checkout from before it) has none.
  gateway: { bench: 41, upstream: 31, inference: 150, tools: 1, jobs: 2, usage: 12, ingress: 300, "baseline:inference": 0, "baseline:ingress": 1 },
  baseline: {
    bench: 40,
    upstream: 30,
    inference: 2,
    tools: 0,
    jobs: 0,
    ingress: 1,
    "baseline:inference": 140,
    "baseline:tools": 1,
    "baseline:jobs": 2,
    "baseline:ingress": 290,
  },
};

describe("compareWithBaseline", () => {
  it("when three paths were measured, then each gateway's added latency and gateway − baseline are per percentile", () => {
    const c = compareWithBaseline(latency, cpu);
    expect(c.gatewayMinusDirectMs).toEqual({ p50: 0.9, p90: 1.05, p99: 1.6 });
    expect(c.baselineMinusDirectMs).toEqual({ p50: 0.8, p90: 1, p99: 1.9 });
    // Rounded to the µs: 1.1 − 1.0 is 0.10000000000000009 in floating point.
    expect(c.gatewayMinusBaselineMs).toEqual({ p50: 0.1, p90: 0.05, p99: -0.3 });
  });

  it("when CPU was read for both meshes, then each mesh's services count only while its own path ran", () => {
    const c = compareWithBaseline(latency, cpu);
    expect(c.servicesCpuMicrosPerRequest).toEqual({
      gateway: { inference: 150, tools: 1, jobs: 2, usage: 12, console: 0, ingress: 300, total: 465 },
      baseline: { inference: 140, tools: 1, jobs: 2, usage: 0, console: 0, ingress: 290, total: 433 },
      gatewayMinusBaseline: 32,
    });
    expect(c.cpuMicrosPerRequest).toBe(cpu);
    expect(c.wholeRunServicesCpuMicrosPerRequest).toBeUndefined();
  });

  it("when CPU was also read over the whole run, then each mesh's services sum all of theirs, whichever path ran", () => {
    // The gateway's usage service wrote a batch during the baseline's blocks: only the whole run sees it.
    const wholeRun = { bench: 120, upstream: 90, inference: 152, usage: 30, ingress: 303, "baseline:inference": 141, "baseline:ingress": 292 };
    const c = compareWithBaseline(latency, cpu, wholeRun);
    expect(c.wholeRunServicesCpuMicrosPerRequest).toEqual({
      gateway: { inference: 152, tools: 0, jobs: 0, usage: 30, console: 0, ingress: 303, total: 485 },
      baseline: { inference: 141, tools: 0, jobs: 0, usage: 0, console: 0, ingress: 292, total: 433 },
      gatewayMinusBaseline: 52,
    });
    const [, table] = baselineTables(c, "t", { dir: "/tmp/gw-base", commit: "abc1234", dirty: false });
    expect(table?.rows.slice(4)).toEqual([
      ["gateway, whole run", "", "", 152, 0, 0, 30, 0, 303, 485],
      ["baseline, whole run", "", "", 141, 0, 0, 0, 0, 292, 433],
      ["gateway − baseline, whole run", "", "", "+11", "+0", "+0", "+30", "+0", "+11", "+52"],
    ]);
  });
});

describe("baselineTables", () => {
  const checkout = { dir: "/tmp/gw-base", commit: "abc1234", dirty: false };

  it("when rendered, then latency shows the three paths, both added latencies and gateway − baseline", () => {
    const [table] = baselineTables(compareWithBaseline(latency, cpu), "one request in flight: 2000 per path", checkout);
    expect(table?.title).toBe("one request in flight: 2000 per path; baseline = abc1234 (ms)");
    expect(table?.rows.map((row) => row[0])).toEqual(["direct", "gateway", "baseline", "gateway − direct", "baseline − direct", "gateway − baseline"]);
    expect(table?.rows[2]).toEqual(["baseline", "1.000", "1.250", "2.300", "3.300", "1.010"]);
    expect(table?.rows[5]).toEqual(["gateway − baseline", "+0.100", "+0.050", "-0.300", "", ""]);
    expect(renderTable(table ?? { title: "", columns: [], rows: [] })).toContain("gateway − baseline  +0.100  +0.050  -0.300");
  });

  it("when rendered, then CPU shows each path's own mesh under the same service columns, and the difference", () => {
    const [, table] = baselineTables(compareWithBaseline(latency, cpu), "t", { ...checkout, dirty: true });
    expect(table?.columns).toEqual(["path", "bench", "upstream", "inference", "tools", "jobs", "usage", "console", "ingress", "services"]);
    expect(table?.rows).toEqual([
      ["direct", 40, 30, 1, 0, 0, 0, 0, 2, 3],
      ["gateway", 41, 31, 150, 1, 2, 12, 0, 300, 465],
      ["baseline", 40, 30, 140, 1, 2, 0, 0, 290, 433],
      ["gateway − baseline", "+1", "+1", "+10", "+0", "+0", "+12", "+0", "+10", "+32"],
    ]);
    const [latencyTable] = baselineTables(compareWithBaseline(latency, cpu), "t", { ...checkout, dirty: true });
    expect(latencyTable?.title).toBe("t; baseline = abc1234 with uncommitted changes (ms)");
  });
});
