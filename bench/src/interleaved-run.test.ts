import { describe, expect, it } from "vitest";
import type { TimedClient } from "./http-client";
import { byKey, cpuPerRequest, measureInterleaved, roundedSummary, warmUpInterleaved } from "./interleaved-run";

/** A client whose every request "takes" `micros`, logging which path sent it. */
function fake(path: string, micros: number, log: string[]): TimedClient {
  return {
    timed: async () => {
      log.push(path);
      return micros;
    },
    once: async () => ({ status: 200, headers: {}, text: "" }),
    close: async () => {},
  };
}

describe("measureInterleaved", () => {
  it("runs every path's requests in alternating blocks and keeps each path's latencies apart", async () => {
    const log: string[] = [];
    const paths = ["a", "b", "c"] as const;
    const clients = { a: fake("a", 100, log), b: fake("b", 2000, log), c: fake("c", 30_000, log) };
    const run = await measureInterleaved(clients, paths, { requests: 4, block: 2, processes: {} });
    expect(log.join("")).toBe("aabbcc" + "ccbbaa");
    expect(byKey(paths, (p) => run.histograms[p].totalCount)).toEqual({ a: 4, b: 4, c: 4 });
    expect(run.histograms.b.getValueAtPercentile(50)).toBe(2000);
    expect(run.halves.c.firstHalfP50).toBeCloseTo(30, 1);
    expect(Object.keys(run.cpu.a)).toEqual(["bench"]);
    expect(run.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("warms up the same way without recording", async () => {
    const log: string[] = [];
    await warmUpInterleaved({ a: fake("a", 1, log), b: fake("b", 1, log) }, ["a", "b"], 3, 2);
    expect(log.join("")).toBe("aabbba");
  });
});

describe("rounding", () => {
  it("rounds summaries to the µs and CPU to whole µs per request", () => {
    expect(roundedSummary({ count: 3, p50: 0.12345, p90: 1.0004, p99: 2, max: 2.5555, mean: 0.3333 })).toEqual({
      count: 3,
      p50: 0.123,
      p90: 1,
      p99: 2,
      max: 2.556,
      mean: 0.333,
    });
    expect(cpuPerRequest({ bench: 1000, portkey: 2501 }, 10)).toEqual({ bench: 100, portkey: 250 });
  });
});
