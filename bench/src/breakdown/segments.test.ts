import { describe, expect, it } from "vitest";
import { breakdownOf, type HookRow } from "./segments";

describe("breakdownOf", () => {
  // 100 requests: every hop costs the same but for request 42, which waits 3 ms more on the upstream.
  const n = 100;
  const inference: HookRow[] = Array.from({ length: n }, (_, i) => [150, i === 42 ? 3_100 : 100, 120]);
  const ingress: HookRow[] = inference.map((row) => [400, row[0] + row[1] + row[2] + 60, 200]);
  const endToEnd = ingress.map((row) => row[0] + row[1] + row[2] + 50);

  it("splits each request into its hops, by position, and finds where the slowest ones lost time", () => {
    const result = breakdownOf(endToEnd, ingress, inference, 0.01);
    const bySegment = Object.fromEntries(result.segments.map((s) => [s.segment, s]));
    expect(result.requests).toBe(100);
    expect(bySegment["client → ingress, and back (outside ingress's handler)"]).toMatchObject({ p50: 0.05, p99: 0.05, slowestMean: 0.05 });
    expect(bySegment["ingress → inference, and back (outside inference's handler)"]).toMatchObject({ p50: 0.06, slowestMean: 0.06 });
    expect(bySegment["inference waits for the upstream"]).toMatchObject({ p50: 0.1, p99: 0.1, slowestMean: 3.1 });
    expect(bySegment["end to end (client)"]).toMatchObject({ p50: 1.08, slowestMean: 4.08 });
    expect(result.segments.map((s) => s.segment)).toHaveLength(8);
  });

  it("refuses rows that cannot be paired with the client's timings", () => {
    expect(() => breakdownOf(endToEnd, ingress.slice(1), inference)).toThrow(/ingress recorded 99/);
    expect(() => breakdownOf([], [], [])).toThrow();
  });
});
