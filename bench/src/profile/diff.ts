/**
 * Two CPU profiles (V8's, as `hook.mjs` writes them from the two meshes of one --baseline run)
 * compared function by function: each function's own samples in the main thread, per request, from
 * a point of the run on (the start-up before it left out), and their difference, largest first.
 *
 *   pnpm tsx bench/src/profile/diff.ts A.cpuprofile B.cpuprofile --requests N [--from 0.3] [--to 0.99] [--top 40]
 *
 * Samples are counted, not their time deltas: a delta also holds the time the thread was not
 * running, so after a wait it credits the next function with the wait. A sample stands for the
 * interval the profile was taken at (`hook.mjs` records it; `--interval` overrides it): not the mean
 * delta, which on a loaded machine also holds the time the process waited for a CPU. `--to` leaves
 * out the end: a service's stop (nats.js's close trace parses the bundle's source map) falls in the
 * last percent of a run.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";

/** The part of a `.cpuprofile` this reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
  /** The sampling interval asked for (µs), added by `hook.mjs`; V8's own profiles lack it. */
  samplingIntervalUs?: number;
}

/** A function's name and file; bundles' chunk hashes left out, so the same code in two builds matches. */
function functionKey(frame: CpuProfile["nodes"][number]["callFrame"]): string {
  const file = frame.url
    .replace(/^.*\/node_modules\/(?:\.pnpm\/)?/, "")
    .replace(/^.*\/(services|packages)\//, "$1/")
    .replace(/chunk-[A-Z0-9]+/, "chunk");
  return `${frame.functionName || "(anonymous)"} ${file}`.trim();
}

/** Samples per function between the fractions `from` and `to` of the profile's duration; `(idle)` left out. */
export function selfSamples(profile: CpuProfile, from = 0, to = 1): Map<string, number> {
  const keys = new Map(profile.nodes.map((n) => [n.id, functionKey(n.callFrame)]));
  const span = profile.endTime - profile.startTime;
  const cut = profile.startTime + span * from;
  const end = profile.startTime + span * to;
  const counts = new Map<string, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < cut) continue;
    if (t > end) break;
    const key = keys.get(profile.samples[i]!) ?? "(unknown)";
    if (key === "(idle)") continue;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

export interface FunctionDifference {
  key: string;
  a: number;
  b: number;
  diff: number;
}

/** Each function's samples as µs a request (samples × interval ÷ requests) in a and b, largest difference first. */
export function differences(a: Map<string, number>, b: Map<string, number>, intervalMicros: number, requests: number): FunctionDifference[] {
  const per = (n: number | undefined) => ((n ?? 0) * intervalMicros) / requests;
  const keys = new Set([...a.keys(), ...b.keys()]);
  return [...keys]
    .map((key) => ({ key, a: per(a.get(key)), b: per(b.get(key)), diff: per(a.get(key)) - per(b.get(key)) }))
    .sort((x, y) => Math.abs(y.diff) - Math.abs(x.diff) || x.key.localeCompare(y.key));
}

const total = (m: Map<string, number>) => [...m.values()].reduce((s, n) => s + n, 0);

/**
 * What one sample stands for (µs): the override, else the interval the profiles record (100 when
 * they record none, V8's default in hook.mjs). Profiles taken at different intervals cannot be
 * compared sample for sample, so they get undefined.
 */
export function samplingInterval(profiles: readonly CpuProfile[], override?: number): number | undefined {
  if (override !== undefined) return override;
  const recorded = new Set(profiles.map((p) => p.samplingIntervalUs ?? 100));
  return recorded.size === 1 ? [...recorded][0] : undefined;
}

function main(argv: string[]): number {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      requests: { type: "string" },
      from: { type: "string", default: "0.3" },
      to: { type: "string", default: "0.99" },
      top: { type: "string", default: "40" },
      interval: { type: "string" },
    },
  });
  const requests = Number(values.requests);
  const from = Number(values.from);
  const to = Number(values.to);
  if (positionals.length !== 2 || !(requests > 0) || !(from >= 0 && from < to && to <= 1)) {
    process.stderr.write("usage: diff.ts A.cpuprofile B.cpuprofile --requests N [--from 0.3] [--to 0.99] [--top 40] [--interval µs]\n");
    return 2;
  }
  const profiles = positionals.map((file) => JSON.parse(readFileSync(file, "utf8")) as CpuProfile);
  const interval = samplingInterval(profiles, values.interval === undefined ? undefined : Number(values.interval));
  if (interval === undefined || !(interval > 0)) {
    process.stderr.write("diff.ts: the two profiles were taken at different sampling intervals; give --interval µs\n");
    return 2;
  }
  const [a, b] = profiles.map((profile) => selfSamples(profile, from, to)) as [Map<string, number>, Map<string, number>];
  const busy = (m: Map<string, number>) => ((total(m) * interval) / requests).toFixed(1);
  process.stdout.write(`busy: a ${busy(a)}, b ${busy(b)} µs a request (main thread, from ${from} to ${to} of the run, ${interval.toFixed(0)} µs a sample)\n`);
  for (const d of differences(a, b, interval, requests).slice(0, Number(values.top))) {
    process.stdout.write(`${(d.diff >= 0 ? "+" : "") + d.diff.toFixed(2)}\ta ${d.a.toFixed(2)}\tb ${d.b.toFixed(2)}\t${d.key}\n`);
  }
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) process.exitCode = main(process.argv.slice(2));
