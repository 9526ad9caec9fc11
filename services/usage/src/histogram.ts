/**
 * The latency histogram kept on every roll-up row: fixed log-scale buckets of duration_ms, so the
 * histograms of any rows can be summed element by element and percentiles read off the sum.
 *
 * Bucket 0 holds [0, 1) ms; bucket i (1 ≤ i ≤ STEPS) holds [2^((i-1)/PER_DOUBLING), 2^(i/PER_DOUBLING))
 * ms; the last bucket holds everything from 2^MAX_EXPONENT ms (about 17.5 minutes) on. Three buckets
 * per doubling keep a percentile within about 12% of the true value, which is what a latency
 * dashboard needs, in 62 integers per row. Changing the layout changes stored data: a migration.
 */
const PER_DOUBLING = 3;
const MAX_EXPONENT = 20;
const STEPS = PER_DOUBLING * MAX_EXPONENT;
export const HISTOGRAM_BUCKETS = STEPS + 2;

export function emptyHistogram(): number[] {
  return new Array<number>(HISTOGRAM_BUCKETS).fill(0);
}

export function bucketOf(ms: number): number {
  if (!(ms >= 1)) return 0; // NaN and negatives count as the fastest bucket
  const i = Math.floor(Math.log2(ms) * PER_DOUBLING) + 1;
  return Math.min(i, HISTOGRAM_BUCKETS - 1);
}

/** Lower and upper bound (ms) of a bucket; the last one is open, reported at its lower bound. */
function bounds(i: number): [number, number] {
  if (i === 0) return [0, 1];
  const lo = 2 ** ((i - 1) / PER_DOUBLING);
  return i === HISTOGRAM_BUCKETS - 1 ? [lo, lo] : [lo, 2 ** (i / PER_DOUBLING)];
}

/**
 * The p-quantile (0 < p ≤ 1) of the histogram, interpolated within its bucket; null when empty.
 * Rounded to 0.1 ms: the buckets are coarser than that anyway.
 */
export function percentile(histogram: readonly number[], p: number): number | null {
  let total = 0;
  for (const count of histogram) total += count;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    const count = histogram[i] ?? 0;
    if (count === 0) continue;
    if (seen + count >= rank) {
      const [lo, hi] = bounds(Math.min(i, HISTOGRAM_BUCKETS - 1));
      const within = (rank - seen - 0.5) / count;
      return Math.round((lo + (hi - lo) * within) * 10) / 10;
    }
    seen += count;
  }
  return null;
}

/** Adds `b` into `a`, element by element. */
export function addInto(a: number[], b: readonly number[]): void {
  for (let i = 0; i < b.length; i++) a[i] = (a[i] ?? 0) + (b[i] ?? 0);
}
