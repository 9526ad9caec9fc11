import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { BaselineComparison } from "./baseline/baseline-report";
import { renderTable, type Table } from "./report";

/**
 * Several --baseline runs of one-in-flight (or, with --scenario, eight-in-flight or spaced), read
 * back from their JSON results and summarised: what this tree cost against the baseline in each, and
 * the mean of the runs with a 95 % interval.
 *
 *   pnpm bench:runs [--scenario eight-in-flight] bench/results/a.json bench/results/b.json …
 *
 * One run is not enough to judge a cost of a few percent: identical code has read up to 15 µs a
 * request apart by which mesh it ran in (bench/README.md), and a run now and then finds one whole
 * mesh slower. Runs that alternate --baseline-first, summarised here, average both out and say how
 * far the mean can be trusted.
 */

/** The services on a request's path, and the ledger's own (usage); the rest idle in this scenario. */
const onPath = ["inference", "ingress", "usage"] as const;

/** One mesh's services and their total, µs per request, as the run's report holds them. */
type MeshCpu = BaselineComparison["servicesCpuMicrosPerRequest"]["gateway"];

/** What one run says, µs per request: this tree's mesh minus the baseline's, and the baseline's own. */
export interface RunFigures {
  source: string;
  commit: string;
  baseline: string;
  baselineFirst: boolean;
  p50DiffMs: number;
  /** Per service, while each mesh's own blocks ran, and `onPath` (inference + ingress + usage). */
  perBlock: Record<string, number>;
  /** Per service over the whole run (work done after a block ended included), and `onPath`. */
  wholeRun: Record<string, number>;
  /** The baseline mesh's CPU on the path and in all its services, while its blocks ran. */
  baselineOnPath: number;
  baselineServices: number;
  /** The baseline mesh's CPU on the path over the whole run. */
  baselineWholeRunOnPath: number;
}

/** Reads one report; throws, naming the file, when it holds no run of `scenario` against a baseline. */
export function runFigures(source: string, report: unknown, scenario = "one-in-flight"): RunFigures {
  const r = report as {
    machine?: { commit?: string };
    flags?: { baselineFirst?: boolean };
    baseline?: { commit?: string };
    scenarios?: Record<string, unknown>;
  };
  // A report without a baseline (or from before these fields) lacks them: checked below.
  const run = r.scenarios?.[scenario] as Partial<BaselineComparison> | undefined;
  const block = run?.servicesCpuMicrosPerRequest;
  const whole = run?.wholeRunServicesCpuMicrosPerRequest;
  if (!run?.gatewayMinusBaselineMs || !block || !whole) throw new Error(`${source}: no ${scenario} run against a --baseline`);
  return {
    source,
    commit: r.machine?.commit ?? "unknown",
    baseline: r.baseline?.commit ?? "unknown",
    baselineFirst: r.flags?.baselineFirst ?? false,
    p50DiffMs: run.gatewayMinusBaselineMs.p50,
    perBlock: differences(block.gateway, block.baseline),
    wholeRun: differences(whole.gateway, whole.baseline),
    baselineOnPath: pathSum(block.baseline),
    baselineServices: block.baseline.total,
    baselineWholeRunOnPath: pathSum(whole.baseline),
  };
}

function pathSum(cpu: MeshCpu): number {
  return onPath.reduce((sum, name) => sum + cpu[name], 0);
}

function differences(gateway: MeshCpu, baseline: MeshCpu): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of Object.keys(gateway) as (keyof MeshCpu)[]) out[name] = gateway[name] - (baseline[name] ?? 0);
  out.onPath = pathSum(gateway) - pathSum(baseline);
  return out;
}

/** Two-sided 95 % quantiles of Student's t by degrees of freedom (1 to 30); 1.96 beyond. */
const T95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069,
  2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

export interface MeanInterval {
  mean: number;
  /** Half the width of the 95 % interval of the mean; undefined for fewer than two values. */
  half95: number | undefined;
}

/** The mean of independent runs and the half-width of its 95 % confidence interval (Student's t). */
export function meanInterval(values: readonly number[]): MeanInterval {
  if (values.length === 0) throw new Error("meanInterval: no values");
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, half95: undefined };
  const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1);
  const t = T95[n - 2] ?? 1.96;
  return { mean, half95: (t * Math.sqrt(variance)) / Math.sqrt(n) };
}

/**
 * The mean of runs in two groups (one per start order), each group's mean weighing half, and the
 * 95 % half-width from each group's own spread (Welch's t, its degrees of freedom rounded down).
 * With the start order alternated the mean is the plain one; the interval leaves out the gap between
 * the orders, which is the bench's, not the tree's (the mesh started first reads higher), and which
 * otherwise widens it. Undefined unless each group has two runs.
 */
export function balancedInterval(first: readonly number[], second: readonly number[]): MeanInterval | undefined {
  if (first.length < 2 || second.length < 2) return undefined;
  const groups = [first, second].map((values) => {
    const { mean } = meanInterval(values);
    const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (values.length - 1);
    return { mean, share: variance / values.length, n: values.length };
  });
  const [a, b] = groups as [(typeof groups)[0], (typeof groups)[0]];
  const mean = (a.mean + b.mean) / 2;
  const shares = a.share + b.share;
  if (shares === 0) return { mean, half95: 0 };
  const df = Math.floor(shares ** 2 / (a.share ** 2 / (a.n - 1) + b.share ** 2 / (b.n - 1)));
  const t = T95[df - 1] ?? 1.96;
  return { mean, half95: (t * Math.sqrt(shares)) / 2 };
}

const percent = (part: number, whole: number) => (whole > 0 ? `${((100 * part) / whole).toFixed(1)} %` : "");
const signed = (x: number, digits = 0) => `${x >= 0 ? "+" : ""}${x.toFixed(digits)}`;
const interval = ({ mean, half95 }: MeanInterval, digits = 0) =>
  half95 === undefined ? signed(mean, digits) : `${signed(mean, digits)} ± ${half95.toFixed(digits)}`;

/** One row per run, then the mean of each column with its 95 % interval. */
export function summaryTable(runs: readonly RunFigures[]): Table {
  if (runs.length === 0) throw new Error("no runs to summarise");
  const services = Object.keys(runs[0]!.perBlock).filter((name) => name !== "total" && name !== "onPath");
  const row = (r: RunFigures) => [
    `${r.source}${r.baselineFirst ? " (baseline first)" : ""}`,
    signed(r.p50DiffMs, 3),
    ...services.map((name) => signed(r.perBlock[name] ?? 0)),
    signed(r.perBlock.onPath ?? 0),
    percent(r.perBlock.onPath ?? 0, r.baselineOnPath),
    signed(r.wholeRun.onPath ?? 0),
    percent(r.wholeRun.onPath ?? 0, r.baselineWholeRunOnPath),
    signed(r.perBlock.total ?? 0),
    percent(r.perBlock.total ?? 0, r.baselineServices),
  ];
  type Pick = (r: RunFigures) => number;
  // A summary row: each column's runs summarised (with its 95 % interval), the shares as a mean of each run's share.
  const summaryRow = (label: string, summarise: (pick: Pick) => MeanInterval | undefined) => {
    const cell = (pick: Pick, digits = 0, unit = "") => {
      const m = summarise(pick);
      return m ? `${interval(m, digits)}${unit}` : "";
    };
    const share = (part: Pick, base: Pick) => cell((r) => (100 * part(r)) / base(r), 1, " %");
    const onPath: Pick = (r) => r.perBlock.onPath ?? 0;
    const wholeRun: Pick = (r) => r.wholeRun.onPath ?? 0;
    const total: Pick = (r) => r.perBlock.total ?? 0;
    return [
      label,
      cell((r) => r.p50DiffMs, 3),
      ...services.map((name) => cell((r) => r.perBlock[name] ?? 0)),
      cell(onPath),
      share(onPath, (r) => r.baselineOnPath),
      cell(wholeRun),
      share(wholeRun, (r) => r.baselineWholeRunOnPath),
      cell(total),
      share(total, (r) => r.baselineServices),
    ];
  };
  const mean = summaryRow(`mean of ${runs.length}, 95 % interval`, (pick) => meanInterval(runs.map(pick)));
  // The same with each start order's runs weighing half, when both orders ran at least twice.
  const byOrder = (pick: Pick) => balancedInterval(runs.filter((r) => !r.baselineFirst).map(pick), runs.filter((r) => r.baselineFirst).map(pick));
  const balanced = byOrder((r) => r.p50DiffMs) ? [summaryRow("each start order half, 95 % interval", byOrder)] : [];
  return {
    title: `this tree − baseline over ${runs.length} runs (CPU µs per request per block unless "whole run"; on path = ${onPath.join(" + ")}; % of the baseline's)`,
    columns: ["run", "p50 ms", ...services, "on path", "%", "whole run", "%", "services", "%"],
    rows: [...runs.map(row), mean, ...balanced],
  };
}

function main(args: readonly string[]): number {
  const named = args[0] === "--scenario";
  const scenario = named ? args[1] : undefined;
  const files = named ? args.slice(2) : args;
  if (files.length === 0 || (named && scenario === undefined)) {
    process.stderr.write("usage: pnpm bench:runs [--scenario NAME] RESULT.json [RESULT.json …] (runs with --baseline; one-in-flight unless named)\n");
    return 2;
  }
  try {
    const runs = files.map((file) => runFigures(file, JSON.parse(readFileSync(file, "utf8")) as unknown, scenario));
    const pairs = new Set(runs.map((r) => `${r.commit} against ${r.baseline}`));
    process.stdout.write(`${[...pairs].join("; ")}\n${renderTable(summaryTable(runs))}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) process.exitCode = main(process.argv.slice(2));
