import { describe, expect, it } from "vitest";
import { describeCpuIdle } from "./machine";
import { formatMs, renderHeader, renderTable } from "./report";

describe("formatMs", () => {
  it("shows three decimals, and a sign on differences", () => {
    expect(formatMs(1.23456)).toBe("1.235");
    expect(formatMs(0.1)).toBe("0.100");
    expect(formatMs(1.5, true)).toBe("+1.500");
    expect(formatMs(-0.25, true)).toBe("-0.250");
  });
});

describe("renderTable", () => {
  it("left-aligns labels and right-aligns numbers under their headers", () => {
    const text = renderTable({
      title: "t",
      columns: ["path", "p50"],
      rows: [
        ["direct", "0.150"],
        ["gateway − direct", "+12.300"],
      ],
    });
    expect(text.split("\n")).toEqual(["t", "path                  p50", "direct              0.150", "gateway − direct  +12.300"]);
  });
});

describe("renderHeader", () => {
  it("names the machine, Node and commit, and flags uncommitted changes", () => {
    const text = renderHeader({
      cpuModel: "CPU X",
      cores: 2,
      memoryMB: 1024,
      platform: "linux-x64",
      node: "v20.1.0",
      commit: "abc1234",
      dirty: true,
      loadAverage: [0.5, 0.25, 0.1],
    });
    expect(text).toContain("CPU X, 2 cores");
    expect(text).toContain("v20.1.0");
    expect(text).toContain("abc1234 (with uncommitted changes)");
    expect(text).toContain("load     0.5 0.25 0.1");
    expect(text).not.toContain("idle");
  });

  it("says how idle CPUs wait when the machine tells", () => {
    const text = renderHeader({
      cpuModel: "CPU X",
      cores: 2,
      memoryMB: 1024,
      platform: "linux-x64",
      node: "v20.1.0",
      commit: "abc1234",
      dirty: false,
      loadAverage: [0, 0, 0],
      cpuIdle: "acpi_idle",
    });
    expect(text.split("\n")).toContain("idle     acpi_idle");
  });
});

describe("describeCpuIdle", () => {
  it("names the driver, and for haltpoll whether it polls before halting", () => {
    expect(describeCpuIdle("haltpoll", "0")).toBe("haltpoll, halts at once (no polling)");
    expect(describeCpuIdle("haltpoll", "200000")).toBe("haltpoll, polls up to 200000 ns before halting");
    expect(describeCpuIdle("intel_idle", undefined)).toBe("intel_idle");
    expect(describeCpuIdle("none", undefined)).toBeUndefined();
    expect(describeCpuIdle(undefined, "0")).toBeUndefined();
  });
});
