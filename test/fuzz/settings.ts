/**
 * How much the fuzz suite runs. CI uses the defaults: a fixed seed and a case count that keeps both
 * modes to about a minute on a 2-core machine. `pnpm fuzz` (test/fuzz/main.ts) passes a long run's
 * count, seed, replay path and survey flag through these variables, the only ones this suite reads.
 */
export interface FuzzSettings {
  /** Cases per mode, shared out between the classes by weight. */
  count: number;
  seed: number;
  /** fast-check's replay path of a reported failure (with its seed and class). */
  path?: string;
  /** Only this class runs (a replay, or a long run of one class). */
  only?: string;
  /** Only this mode runs ("mesh" or "embedded"); undefined: both. */
  mode?: "mesh" | "embedded";
  /** Record every failure and keep going, then print them grouped, instead of stopping at the first. */
  survey: boolean;
  /** Print one line per case: status, time, request and what the emulators saw. */
  verbose: boolean;
  /** Requests of the flood test; the embedded default runs a fifth of them. */
  floodRequests: number;
  /** Concurrent unauthenticated bodies of 32 MiB; the embedded default sends an eighth of them. */
  floodBodies: number;
}

export const CI_SEED = 20_250_120;
export const CI_COUNT = 2_500;

function number(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value !== undefined && value !== "" && Number.isFinite(n) ? n : fallback;
}

export function fuzzSettings(env: Record<string, string | undefined> = process.env): FuzzSettings {
  return {
    count: Math.max(1, Math.floor(number(env.FUZZ_COUNT, CI_COUNT))),
    seed: Math.floor(number(env.FUZZ_SEED, CI_SEED)),
    path: env.FUZZ_PATH || undefined,
    only: env.FUZZ_CLASS || undefined,
    mode: env.FUZZ_MODE === "mesh" || env.FUZZ_MODE === "embedded" ? env.FUZZ_MODE : undefined,
    survey: env.FUZZ_SURVEY === "1",
    verbose: env.FUZZ_VERBOSE === "1",
    floodRequests: Math.floor(number(env.FUZZ_FLOOD_REQUESTS, 10_000)),
    floodBodies: Math.floor(number(env.FUZZ_FLOOD_BODIES, 64)),
  };
}
