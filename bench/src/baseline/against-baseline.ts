import { summarize } from "../histogram";
import { createTimedClient, type TimedClient } from "../http-client";
import { rotateBlocks } from "../interleave";
import { byKey, cpuPerRequest, measureInterleaved, roundedSummary, warmUpInterleaved, type InterleavedMeasurement } from "../interleaved-run";
import type { BenchContext, Json } from "../scenarios/scenario";
import { verifyChatPaths } from "../targets";
import type { BaselineMesh } from "./baseline-checkout";
import { baselinePaths, compareWithBaseline, type BaselineComparison, type BaselinePath } from "./baseline-report";

export interface BaselineRunOptions {
  /** The scenario's name, for progress lines and errors. */
  name: string;
  /** Measured requests per path. */
  requests: number;
  /** Unrecorded requests per path first, in the same order (0: none). */
  warmup: number;
  block: number;
  /** Requests in flight at once on a path (1 unless given). */
  inFlight?: number;
  /** Wraps each path's client, e.g. a pause before every request. */
  wrap?: (client: TimedClient) => TimedClient;
}

/**
 * Requests (one at a time, or `inFlight` at once) over three paths in one run: straight to the
 * upstream, through this tree's mesh and through the baseline's, in blocks whose order rotates
 * (rotateBlocks) so no path is favoured by what ran before it. CPU is read for every process of both
 * meshes around each block.
 */
export async function measureAgainstBaseline(
  ctx: BenchContext,
  baseline: BaselineMesh,
  options: BaselineRunOptions,
): Promise<InterleavedMeasurement<BaselinePath>> {
  const targets = { ...ctx.chat, baseline: baseline.chat };
  const inFlight = options.inFlight ?? 1;
  const clients = byKey(baselinePaths, (path) => createTimedClient(targets[path], inFlight));
  const wrap = options.wrap;
  const timed = wrap ? byKey(baselinePaths, (path) => wrap(clients[path])) : clients;
  const processes = { ...ctx.processes, ...baseline.processes };
  try {
    await verifyChatPaths(clients, baselinePaths);
    if (options.warmup > 0) {
      ctx.progress(`${options.name}: warm-up, ${options.warmup} requests per path (direct, gateway, baseline ${baseline.commit})`);
      await warmUpInterleaved(timed, baselinePaths, options.warmup, options.block, rotateBlocks, inFlight);
    }
    ctx.progress(`${options.name}: ${options.requests} requests per path in blocks of ${options.block} (direct, gateway, baseline ${baseline.commit})`);
    const answeredBefore = await ctx.upstream.answered();
    const run = await measureInterleaved(timed, baselinePaths, { requests: options.requests, block: options.block, processes, order: rotateBlocks, inFlight });
    // Every request on every path must have reached the upstream: no error path, cache or shortcut.
    const reached = (await ctx.upstream.answered()) - answeredBefore;
    if (reached !== baselinePaths.length * options.requests) {
      throw new Error(`${options.name}: upstream answered ${reached} requests, expected ${baselinePaths.length * options.requests}`);
    }
    return run;
  } finally {
    await Promise.all(baselinePaths.map((path) => clients[path].close()));
  }
}

/** A three-path run's latency summaries and CPU per request, compared (baseline-report.ts). */
export function comparisonOf(run: Pick<InterleavedMeasurement<BaselinePath>, "histograms" | "cpu" | "wholeRunCpu">, requests: number): BaselineComparison {
  return compareWithBaseline(
    byKey(baselinePaths, (path) => roundedSummary(summarize(run.histograms[path]))),
    byKey(baselinePaths, (path) => cpuPerRequest(run.cpu[path], requests)),
    cpuPerRequest(run.wholeRunCpu, requests),
  );
}

/** Where the baseline came from, for the JSON results. */
export function baselineData(baseline: BaselineMesh): Json {
  return { dir: baseline.dir, commit: baseline.commit, dirty: baseline.dirty };
}
