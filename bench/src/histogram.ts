import { build, encodeIntoCompressedBase64, type Histogram } from "hdr-histogram-js";

export type { Histogram };

/** Microseconds from 1 µs to 60 s with 3 significant digits (±0.1 %): enough for any one request. */
export function createLatencyHistogram(): Histogram {
  return build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 60_000_000,
    numberOfSignificantValueDigits: 3,
    // Auto-resize keeps a pathological outlier (a stalled request) in the data instead of throwing.
    autoResize: true,
  });
}

/** Whole microseconds since `startNs` (a process.hrtime.bigint() reading), at least 1. */
export function microsSince(startNs: bigint, nowNs: bigint = process.hrtime.bigint()): number {
  return Math.max(1, Math.round(Number(nowNs - startNs) / 1000));
}

export const reportedPercentiles = [50, 90, 99] as const;
export type Percentile = (typeof reportedPercentiles)[number];
export type PercentileKey = `p${Percentile}`;

/** A histogram's headline numbers, in milliseconds. */
export type LatencySummary = Record<PercentileKey, number> & { count: number; max: number; mean: number };

export function summarize(h: Histogram): LatencySummary {
  const ms = (us: number) => us / 1000;
  return {
    count: h.totalCount,
    p50: ms(h.getValueAtPercentile(50)),
    p90: ms(h.getValueAtPercentile(90)),
    p99: ms(h.getValueAtPercentile(99)),
    max: ms(h.maxValue),
    mean: ms(h.mean),
  };
}

/** Per-percentile `a − b` in ms: the gateway's added latency when a = gateway and b = direct. */
export function percentileDifference(a: LatencySummary, b: LatencySummary): Record<PercentileKey, number> {
  return { p50: a.p50 - b.p50, p90: a.p90 - b.p90, p99: a.p99 - b.p99 };
}

/** The full histogram in HdrHistogram's portable form, so later runs can be merged or re-plotted. */
export function encodeHistogram(h: Histogram): string {
  return encodeIntoCompressedBase64(h);
}
