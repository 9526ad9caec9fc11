import { baselineData, comparisonOf, measureAgainstBaseline } from "../baseline/against-baseline";
import type { BaselineMesh } from "../baseline/baseline-checkout";
import { baselinePaths, baselineTables } from "../baseline/baseline-report";
import { driftWarning } from "../drift";
import { encodeHistogram, percentileDifference, summarize, type LatencySummary } from "../histogram";
import { createTimedClient } from "../http-client";
import { byKey, cpuPerRequest, measureInterleaved, round3, roundedSummary, warmUpInterleaved } from "../interleaved-run";
import { formatMs, type Table } from "../report";
import { chatPaths, verifyChatPaths, type ChatPath } from "../targets";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

/**
 * Scenario 1: one request in flight. The same non-streaming chat request goes straight to the
 * upstream and through the gateway, in alternating blocks, so the difference between the two
 * latency distributions is the time the gateway adds when it is otherwise idle.
 */
export const oneInFlight: Scenario = inFlightScenario("one-in-flight", 1);

/**
 * Opt-in: eight requests in flight on each path, the same blocks otherwise. No service on the path
 * then idles between requests (on two vCPUs this is about the mesh's capacity), so CPU per request
 * is what a busy gateway pays, where one-in-flight's is what each request costs a gateway that wakes
 * for it; with --baseline, a change's cost under load.
 */
export const eightInFlight: Scenario = inFlightScenario("eight-in-flight", 8);

function inFlightScenario(name: string, inFlight: number): Scenario {
  const what = inFlight === 1 ? "one request in flight" : `${inFlight} requests in flight`;
  return {
    name,
    async run(ctx: BenchContext): Promise<ScenarioResult> {
      if (ctx.baseline) return againstBaseline(ctx, ctx.baseline, name, what, inFlight);
      const { flags } = ctx;
      const clients = byPath((path) => createTimedClient(ctx.chat[path], inFlight));
      try {
        await verifyChatPaths(clients);

        ctx.progress(`${name}: warm-up, ${flags.warmup} requests per path`);
        await warmUpInterleaved(clients, chatPaths, flags.warmup, flags.block, undefined, inFlight);

        ctx.progress(`${name}: ${flags.requests} requests per path in blocks of ${flags.block}`);
        const answeredBefore = await ctx.upstream.answered();
        const {
          histograms,
          halves: drift,
          cpu,
          durationMs,
        } = await measureInterleaved(clients, chatPaths, { requests: flags.requests, block: flags.block, processes: ctx.processes, inFlight });
        // Every gateway request must have reached the upstream: no error path, cache or shortcut.
        const reached = (await ctx.upstream.answered()) - answeredBefore;
        if (reached !== chatPaths.length * flags.requests) {
          throw new Error(`upstream answered ${reached} requests, expected ${chatPaths.length * flags.requests}`);
        }

        const latency = byPath((path) => roundedSummary(summarize(histograms[path])));
        const overhead = percentileDifference(latency.gateway, latency.direct);
        const perRequest = byPath((path) => cpuPerRequest(cpu[path], flags.requests));
        return {
          name,
          tables: [latencyTable(latency, overhead, flags, what), cpuTable(perRequest)],
          notes: chatPaths.flatMap((path) => driftWarning(path, drift[path]) ?? []),
          data: {
            requestsPerPath: flags.requests,
            warmupPerPath: flags.warmup,
            blockSize: flags.block,
            inFlight,
            durationMs: Math.round(durationMs),
            latencyMs: latency,
            gatewayMinusDirectMs: { p50: round3(overhead.p50), p90: round3(overhead.p90), p99: round3(overhead.p99) },
            // CPU of each process while each path's blocks ran (bench = the client); the services idle
            // during direct blocks, so their direct column shows background work only.
            cpuMicrosPerRequest: perRequest,
            halvesP50Ms: drift,
            histogramsMicros: byPath((path) => encodeHistogram(histograms[path])),
          } satisfies Json,
        };
      } finally {
        await Promise.all(chatPaths.map((path) => clients[path].close()));
      }
    },
  };
}

/** With --baseline: direct, gateway and the baseline's mesh, in rotating blocks. */
async function againstBaseline(ctx: BenchContext, baseline: BaselineMesh, name: string, what: string, inFlight: number): Promise<ScenarioResult> {
  const { flags } = ctx;
  const run = await measureAgainstBaseline(ctx, baseline, { name, requests: flags.requests, warmup: flags.warmup, block: flags.block, inFlight });
  const comparison = comparisonOf(run, flags.requests);
  const title = `${what}: ${flags.requests} per path, blocks of ${flags.block} in rotation, after ${flags.warmup} warm-up`;
  return {
    name,
    tables: baselineTables(comparison, title, baseline),
    notes: baselinePaths.flatMap((path) => driftWarning(path, run.halves[path]) ?? []),
    data: {
      requestsPerPath: flags.requests,
      warmupPerPath: flags.warmup,
      blockSize: flags.block,
      blockOrder: "rotating",
      inFlight,
      durationMs: Math.round(run.durationMs),
      baseline: baselineData(baseline),
      ...comparison,
      halvesP50Ms: run.halves,
      histogramsMicros: byKey(baselinePaths, (path) => encodeHistogram(run.histograms[path])),
    } satisfies Json,
  };
}

function byPath<T>(make: (path: ChatPath) => T): Record<ChatPath, T> {
  return byKey(chatPaths, make);
}

function latencyTable(
  latency: Record<ChatPath, LatencySummary>,
  overhead: Record<"p50" | "p90" | "p99", number>,
  flags: BenchContext["flags"],
  what: string,
): Table {
  const row = (label: string, s: LatencySummary) => [label, formatMs(s.p50), formatMs(s.p90), formatMs(s.p99), formatMs(s.max), formatMs(s.mean)];
  return {
    title: `${what}: ${flags.requests} per path, blocks of ${flags.block}, after ${flags.warmup} warm-up (ms)`,
    columns: ["path", "p50", "p90", "p99", "max", "mean"],
    rows: [
      row("direct", latency.direct),
      row("gateway", latency.gateway),
      ["gateway − direct", formatMs(overhead.p50, true), formatMs(overhead.p90, true), formatMs(overhead.p99, true), "", ""],
    ],
  };
}

function cpuTable(perPath: Record<ChatPath, Record<string, number>>): Table {
  const names = Object.keys(perPath.gateway);
  const services = names.filter((n) => n !== "bench" && n !== "upstream");
  const row = (path: ChatPath) => {
    const values = perPath[path];
    const mesh = services.reduce((sum, n) => sum + (values[n] ?? 0), 0);
    return [path, ...names.map((n) => values[n] ?? 0), mesh];
  };
  return {
    title: "CPU per request (µs; bench = the client; other processes read from /proc in 10 ms ticks)",
    columns: ["path", ...names, "services"],
    rows: [row("direct"), row("gateway")],
  };
}
