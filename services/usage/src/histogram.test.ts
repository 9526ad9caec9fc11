import { describe, expect, it } from "vitest";
import { addInto, bucketOf, emptyHistogram, HISTOGRAM_BUCKETS, percentile } from "./histogram";

describe("when durations are counted in the latency histogram", () => {
  it("then each lands in the log bucket that holds it, the extremes in the first and last", () => {
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(0.99)).toBe(0);
    expect(bucketOf(-5)).toBe(0);
    expect(bucketOf(Number.NaN)).toBe(0);
    expect(bucketOf(1)).toBe(1);
    expect(bucketOf(2)).toBe(4); // 2 ms opens the fourth bucket: three per doubling
    expect(bucketOf(1.99)).toBe(3);
    expect(bucketOf(10 * 60 * 60 * 1000)).toBe(HISTOGRAM_BUCKETS - 1);
  });

  it("then percentiles read off the histogram stay within a bucket's width of the true value", () => {
    const durations = Array.from({ length: 1000 }, (_, i) => 5 + i * 0.5); // 5 … 504.5 ms
    const histogram = emptyHistogram();
    for (const ms of durations) histogram[bucketOf(ms)]! += 1;
    const p50 = percentile(histogram, 0.5)!;
    const p95 = percentile(histogram, 0.95)!;
    expect(Math.abs(p50 - 254.5) / 254.5).toBeLessThan(0.13);
    expect(Math.abs(p95 - 479.5) / 479.5).toBeLessThan(0.13);
    expect(percentile(emptyHistogram(), 0.5)).toBeNull();
  });

  it("then two histograms add element by element, as roll-up rows merge", () => {
    const a = emptyHistogram();
    const b = emptyHistogram();
    a[3] = 2;
    b[3] = 1;
    b[7] = 4;
    addInto(a, b);
    expect(a[3]).toBe(3);
    expect(a[7]).toBe(4);
    expect(a.reduce((x, y) => x + y, 0)).toBe(7);
  });
});
