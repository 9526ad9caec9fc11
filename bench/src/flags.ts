import { parseArgs } from "node:util";

export interface BenchFlags {
  /** Measured requests per path (direct and gateway each get this many). */
  requests: number;
  /** Unrecorded requests per path before measuring, so JIT, pools and caches are warm. */
  warmup: number;
  /** Requests per block; paths alternate block by block. */
  block: number;
  /** Where the JSON results go (relative paths against the working directory). */
  out: string;
  /** Also measure the published @portkey-ai/gateway against the same upstream, in the same run. */
  comparePortkey: boolean;
  /** Run only these scenarios (by name, in the usual order); empty: all of them. */
  scenarios: string[];
  /**
   * Another checkout of this repository (installed): its services run as a second mesh, and
   * one-in-flight, spaced and eight-in-flight measure it as a third path beside direct and gateway.
   */
  baseline?: string;
  /**
   * With --baseline: the baseline's mesh starts before this tree's. Identical code has read up to
   * 15 µs a request apart by which mesh it ran in; runs that alternate the order average that out
   * (bench:runs summarises them).
   */
  baselineFirst: boolean;
  /**
   * This tree's services run from their bundles (`pnpm build` first), as the images run them, not
   * from their sources through tsx. With --baseline naming this same tree, one run measures both.
   */
  built: boolean;
  /**
   * With --baseline: the baseline's services run from their bundles too (its `pnpm build` first).
   * With --built, both meshes then run what the images run.
   */
  baselineBuilt: boolean;
  help: boolean;
}

export const defaultFlags: Readonly<BenchFlags> = {
  requests: 2000,
  warmup: 3000, // the services keep speeding up (JIT) for ~2,500 requests; fewer measures warm-up
  block: 100,
  out: "bench/results/latest.json",
  comparePortkey: false,
  scenarios: [],
  baselineFirst: false,
  built: false,
  baselineBuilt: false,
  help: false,
};

export const usage = `usage: tsx bench/src/main.ts [options]
  --requests N   measured requests per path (default ${defaultFlags.requests})
  --warmup N     unrecorded warm-up requests per path (default ${defaultFlags.warmup})
  --block N      requests per block; paths alternate by block (default ${defaultFlags.block})
  --out FILE     JSON results (default ${defaultFlags.out})
  --scenarios A,B
                 run only these scenarios (one-in-flight, spaced, settings, stack-floor, capacity, open-loop, streaming,
                 limiter, async; and, only when named, breakdown, which loads a timing
                 hook into ingress and inference, and eight-in-flight, one-in-flight with
                 eight requests at once)
  --compare-portkey
                 also measure @portkey-ai/gateway (installed into bench/.portkey) on the same upstream
  --baseline DIR another checkout of this repository, installed (git worktree add DIR <commit>, then
                 pnpm install --frozen-lockfile in DIR): its services run as a second mesh on the same
                 upstream, and one-in-flight, spaced and eight-in-flight measure direct, gateway and
                 baseline interleaved
  --baseline-first
                 start the baseline's mesh before this tree's (with --baseline); alternate it between runs
  --built        run this tree's services from their bundles (pnpm build, then node --enable-source-maps
                 services/<name>/dist/main.js, as the images do) instead of through tsx; with --baseline .
                 the baseline is this same tree through tsx, so one run compares the two
  --baseline-built
                 build the baseline checkout (its pnpm build) and run its services from their bundles;
                 with --built, both meshes run as the images do
  --help         this text`;

/** Parses argv (without node and script); throws an Error naming the bad flag. */
export function parseFlags(argv: readonly string[]): BenchFlags {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      requests: { type: "string" },
      warmup: { type: "string" },
      block: { type: "string" },
      out: { type: "string" },
      "compare-portkey": { type: "boolean" },
      scenarios: { type: "string" },
      baseline: { type: "string" },
      "baseline-first": { type: "boolean" },
      built: { type: "boolean" },
      "baseline-built": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const out = values.out ?? defaultFlags.out;
  if (out.trim() === "") throw new Error("--out: expected a file path");
  if (values.baseline !== undefined && values.baseline.trim() === "") throw new Error("--baseline: expected the directory of another checkout");
  if (values["baseline-first"] && values.baseline === undefined) throw new Error("--baseline-first: only with --baseline");
  if (values["baseline-built"] && values.baseline === undefined) throw new Error("--baseline-built: only with --baseline");
  return {
    requests: integer("requests", values.requests, defaultFlags.requests, 1),
    warmup: integer("warmup", values.warmup, defaultFlags.warmup, 0),
    block: integer("block", values.block, defaultFlags.block, 1),
    out,
    comparePortkey: values["compare-portkey"] ?? false,
    scenarios: (values.scenarios ?? "")
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n !== ""),
    // Absent unless given, so runs without it report exactly what they always did.
    ...(values.baseline === undefined ? {} : { baseline: values.baseline }),
    baselineFirst: values["baseline-first"] ?? false,
    built: values.built ?? false,
    baselineBuilt: values["baseline-built"] ?? false,
    help: values.help ?? false,
  };
}

function integer(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  // Number("") is 0 and Number("1e3") is 1000: accept plain digits only, so typos fail loudly.
  if (!/^\d+$/.test(raw.trim())) throw new Error(`--${name}: expected an integer >= ${min}, got "${raw}"`);
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`--${name}: expected an integer >= ${min}, got "${raw}"`);
  return value;
}
