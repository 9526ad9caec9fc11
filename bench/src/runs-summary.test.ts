import { describe, expect, it } from "vitest";
import { balancedInterval, meanInterval, runFigures, summaryTable } from "./runs-summary";

/** A report as main.ts writes it, reduced to what the summary reads. */
function report(gateway: Record<string, number>, baseline: Record<string, number>, options: { baselineFirst?: boolean; whole?: number } = {}) {
  const total = (cpu: Record<string, number>) => Object.values(cpu).reduce((a, b) => a + b, 0);
  const mesh = (cpu: Record<string, number>) => ({ ...cpu, total: total(cpu) });
  const plus = (cpu: Record<string, number>, extra: number) => ({ ...cpu, usage: (cpu.usage ?? 0) + extra });
  return {
    machine: { commit: "abc1234" },
    flags: { baseline: "/tmp/base", baselineFirst: options.baselineFirst ?? false },
    baseline: { commit: "def5678" },
    scenarios: {
      "one-in-flight": {
        gatewayMinusBaselineMs: { p50: 0.02, p90: 0.05, p99: 0.5 },
        servicesCpuMicrosPerRequest: { gateway: mesh(gateway), baseline: mesh(baseline) },
        wholeRunServicesCpuMicrosPerRequest: { gateway: mesh(plus(gateway, options.whole ?? 0)), baseline: mesh(baseline) },
      },
    },
  };
}

const base = { inference: 330, tools: 2, jobs: 5, usage: 5, console: 1, ingress: 370 };

describe("runFigures", () => {
  it("when a run measured a baseline, then each service's difference, the path's and the baseline's own CPU are read", () => {
    const run = runFigures("a.json", report({ ...base, inference: 345, usage: 15, ingress: 390, tools: 4 }, base, { baselineFirst: true, whole: 6 }));
    expect(run).toMatchObject({ source: "a.json", commit: "abc1234", baseline: "def5678", baselineFirst: true, p50DiffMs: 0.02 });
    expect(run.perBlock).toMatchObject({ inference: 15, usage: 10, ingress: 20, tools: 2, jobs: 0, onPath: 45, total: 47 });
    expect(run.wholeRun).toMatchObject({ usage: 16, onPath: 51 });
    expect(run.baselineOnPath).toBe(705);
    expect(run.baselineServices).toBe(713);
    expect(run.baselineWholeRunOnPath).toBe(705);
  });

  it("when another scenario is named, then its run is read, and a report without it is refused naming it", () => {
    const one = report({ ...base, usage: 15 }, base);
    const both = { ...one, scenarios: { ...one.scenarios, "eight-in-flight": report({ ...base, usage: 8 }, base).scenarios["one-in-flight"] } };
    expect(runFigures("b.json", both, "eight-in-flight").perBlock.usage).toBe(3);
    expect(runFigures("b.json", both).perBlock.usage).toBe(10);
    expect(() => runFigures("a.json", one, "eight-in-flight")).toThrow("a.json: no eight-in-flight run against a --baseline");
  });

  it("when a report holds no run against a baseline, then it is refused by name", () => {
    expect(() => runFigures("plain.json", { scenarios: { "one-in-flight": { latencyMs: {} } } })).toThrow(
      "plain.json: no one-in-flight run against a --baseline",
    );
    expect(() => runFigures("empty.json", {})).toThrow("empty.json");
  });
});

describe("meanInterval", () => {
  it("gives the mean and Student's 95 % half-width: 1, 2, 3 has sd 1, so 4.303 / √3", () => {
    const { mean, half95 } = meanInterval([1, 2, 3]);
    expect(mean).toBe(2);
    expect(half95).toBeCloseTo(4.303 / Math.sqrt(3), 6);
  });

  it("when runs agree, then the interval is nil; with one run, then there is none", () => {
    expect(meanInterval([5, 5, 5, 5])).toEqual({ mean: 5, half95: 0 });
    expect(meanInterval([7])).toEqual({ mean: 7, half95: undefined });
    expect(() => meanInterval([])).toThrow();
  });

  it("beyond thirty runs, then the normal quantile is used", () => {
    const values = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 0 : 2));
    const sd = Math.sqrt((40 * 1) / 39);
    expect(meanInterval(values).half95).toBeCloseTo((1.96 * sd) / Math.sqrt(40), 6);
  });
});

describe("balancedInterval", () => {
  it("when the start orders read apart by a constant, then the mean is the plain one and the half-width is as if they did not", () => {
    // Each group: sd 2 over 3 runs, so its mean's variance is 4/3; Welch's df for two such is 4 (t 2.776).
    const half = (2.776 * Math.sqrt(8 / 3)) / 2;
    const apart = balancedInterval([10, 12, 14], [20, 22, 24]);
    expect(apart?.mean).toBe(17);
    expect(apart?.half95).toBeCloseTo(half, 6);
    expect(balancedInterval([10, 12, 14], [10, 12, 14])?.half95).toBeCloseTo(half, 6);
    // The plain interval over the same six takes the gap as spread: sd 5.76, t(5) 2.571.
    expect(meanInterval([10, 12, 14, 20, 22, 24]).half95).toBeCloseTo((2.571 * Math.sqrt(33.2)) / Math.sqrt(6), 6);
  });

  it("when a start order has fewer than two runs, then there is none; when all runs agree, then it is nil", () => {
    expect(balancedInterval([1, 2], [3])).toBeUndefined();
    expect(balancedInterval([], [1, 2])).toBeUndefined();
    expect(balancedInterval([4, 4], [6, 6, 6])).toEqual({ mean: 5, half95: 0 });
  });
});

describe("summaryTable", () => {
  it("lists each run with its start order, then the mean of every column as a share of the baseline", () => {
    const runs = [
      runFigures("a.json", report({ ...base, inference: 340, ingress: 380, usage: 15 }, base)),
      runFigures("b.json", report({ ...base, inference: 350, ingress: 390, usage: 25 }, base, { baselineFirst: true })),
    ];
    const table = summaryTable(runs);
    expect(table.columns).toEqual([
      "run",
      "p50 ms",
      "inference",
      "tools",
      "jobs",
      "usage",
      "console",
      "ingress",
      "on path",
      "%",
      "whole run",
      "%",
      "services",
      "%",
    ]);
    expect(table.rows[0]).toEqual(["a.json", "+0.020", "+10", "+0", "+0", "+10", "+0", "+10", "+30", "4.3 %", "+30", "4.3 %", "+30", "4.2 %"]);
    expect(table.rows[1]?.[0]).toBe("b.json (baseline first)");
    const mean = table.rows[2] ?? [];
    expect(mean[0]).toBe("mean of 2, 95 % interval");
    // On path: 30 and 60, mean 45, sd 21.2, t(1) 12.706: 45 ± 191.
    expect(mean[8]).toBe("+45 ± 191");
    expect(mean[9]).toMatch(/^\+6\.4 ± \d+\.\d %$/);
  });

  it("when each start order ran twice, then a last row weighs each order's mean half and takes the interval from within them", () => {
    const run = (name: string, onPathExtra: number, baselineFirst: boolean) =>
      runFigures(name, report({ ...base, ingress: 370 + onPathExtra }, base, { baselineFirst }));
    const table = summaryTable([run("a.json", 40, false), run("b.json", 10, true), run("c.json", 44, false), run("d.json", 14, true)]);
    expect(table.rows).toHaveLength(6);
    const mean = table.rows[4] ?? [];
    const balanced = table.rows[5] ?? [];
    expect(balanced[0]).toBe("each start order half, 95 % interval");
    // On path: 40, 44 and 10, 14, mean 27 either way. Over all four the sd is 17.5 (t(3) 3.182): ± 28.
    // Within each order the sd is 2.83, so each mean's variance 4; Welch's df 2 (t 4.303): ± 4.303 × √8 / 2.
    expect(mean[8]).toBe("+27 ± 28");
    expect(balanced[8]).toBe("+27 ± 6");
    // As shares of the baseline's 705 µs on the path.
    expect(balanced[9]).toBe("+3.8 ± 0.9 %");
  });

  it("refuses to summarise nothing", () => {
    expect(() => summaryTable([])).toThrow("no runs");
  });
});
