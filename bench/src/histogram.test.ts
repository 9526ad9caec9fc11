import { describe, expect, it } from "vitest";
import { createLatencyHistogram, microsSince, percentileDifference, summarize } from "./histogram";

describe("summarize", () => {
  it("reports percentiles, max and mean in milliseconds from microsecond samples", () => {
    const h = createLatencyHistogram();
    for (let us = 1; us <= 1000; us++) h.recordValue(us);
    expect(summarize(h)).toEqual({ count: 1000, p50: 0.5, p90: 0.9, p99: 0.99, max: 1, mean: 0.5005 });
  });

  it("sees a slow tail that the median hides", () => {
    const h = createLatencyHistogram();
    for (let i = 0; i < 980; i++) h.recordValue(200);
    for (let i = 0; i < 20; i++) h.recordValue(15_000);
    const s = summarize(h);
    expect(s.p50).toBe(0.2);
    expect(s.p90).toBe(0.2);
    // 3 significant digits: 15 000 µs is reported as the top of its 8 µs-wide bucket.
    expect(s.p99).toBeGreaterThanOrEqual(15);
    expect(s.p99).toBeLessThan(15.016);
  });

  it("keeps values beyond the planned range instead of throwing", () => {
    const h = createLatencyHistogram();
    h.recordValue(120_000_000);
    expect(summarize(h).max).toBeGreaterThanOrEqual(120_000);
  });
});

describe("percentileDifference", () => {
  it("subtracts percentile by percentile (gateway − direct)", () => {
    const direct = { count: 1, p50: 0.2, p90: 0.3, p99: 1, max: 2, mean: 0.25 };
    const gateway = { count: 1, p50: 1.5, p90: 2.5, p99: 0.5, max: 9, mean: 1.6 };
    const d = percentileDifference(gateway, direct);
    expect(d.p50).toBeCloseTo(1.3, 9);
    expect(d.p90).toBeCloseTo(2.2, 9);
    expect(d.p99).toBeCloseTo(-0.5, 9); // a faster tail through the gateway shows as negative, not hidden
  });
});

describe("microsSince", () => {
  it("rounds nanoseconds to whole microseconds, never below 1", () => {
    expect(microsSince(1_000n, 1_501_000n)).toBe(1500);
    expect(microsSince(0n, 1_499n)).toBe(1);
    expect(microsSince(5n, 5n)).toBe(1);
  });
});
