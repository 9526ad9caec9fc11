/**
 * Compares the median of the first and second half of a path's measured blocks. Node services
 * keep getting faster for thousands of requests (JIT tiers, inline caches); if the halves differ,
 * the run measured a warming process and the warm-up was too short.
 */
export type HalfMedians = {
  firstHalfP50: number;
  secondHalfP50: number;
};

/** Relative change from first to second half, e.g. -0.3 when the second half is 30 % faster. */
export function relativeDrift(halves: HalfMedians): number {
  return halves.firstHalfP50 === 0 ? 0 : (halves.secondHalfP50 - halves.firstHalfP50) / halves.firstHalfP50;
}

/**
 * A warning line when the halves differ by more than `threshold` (a fraction) and by more than
 * `floorMs`, else undefined. The floor keeps tens of microseconds on a ~0.05 ms direct path, which
 * cannot move the gateway − direct difference much, from raising alarms.
 */
export function driftWarning(path: string, halves: HalfMedians, threshold = 0.1, floorMs = 0.05): string | undefined {
  const drift = relativeDrift(halves);
  // The epsilon keeps a change of exactly `threshold` (1.0 → 1.1 is 0.10000000000000009) quiet.
  if (Math.abs(drift) <= threshold + 1e-9) return undefined;
  if (Math.abs(halves.secondHalfP50 - halves.firstHalfP50) <= floorMs) return undefined;
  const pct = Math.round(drift * 100);
  return (
    `warning: ${path} p50 went from ${halves.firstHalfP50.toFixed(3)} ms in the first half of the blocks to ` +
    `${halves.secondHalfP50.toFixed(3)} ms in the second (${pct > 0 ? "+" : ""}${pct} %): ` +
    (drift < 0 ? "still warming up, raise --warmup" : "getting slower during the run (load from elsewhere? a leak?)")
  );
}
