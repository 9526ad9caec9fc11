import type { Cleanup } from "../cleanup";
import { driftWarning } from "../drift";
import { encodeHistogram, percentileDifference, reportedPercentiles, summarize, type LatencySummary, type PercentileKey } from "../histogram";
import { createTimedClient, type RequestTarget } from "../http-client";
import { byKey, cpuPerRequest, measureInterleaved, round3, roundedSummary, warmUpInterleaved } from "../interleaved-run";
import { formatMs, type Table } from "../report";
import type { BenchContext, Json, Scenario, ScenarioResult } from "../scenarios/scenario";
import { verifyChatPaths } from "../targets";
import { measurePortkeyCapacity } from "./portkey-capacity";
import { portkeyChatTarget, verifyPortkeyPath } from "./portkey-target";
import { portkeyPackage, startPortkey, type PortkeyProcess } from "./start-portkey";

export type ComparisonPath = "direct" | "gateway" | "portkey";
export const comparisonPaths: readonly ComparisonPath[] = ["direct", "gateway", "portkey"];

export const portkeyScenarioName = "portkey-one-in-flight";

export type PortkeyOneInFlightArgs = Pick<BenchContext, "flags" | "upstream" | "processes" | "chat" | "progress"> & {
  portkey: Pick<PortkeyProcess, "baseURL" | "headers" | "pid" | "version" | "command">;
};

/**
 * One request in flight over three paths in one run: straight to the upstream, through the
 * gateway, and through Portkey, interleaved block by block, so both gateways' added latency is
 * measured against the same direct baseline under the same machine conditions.
 */
export async function measurePortkeyOneInFlight(args: PortkeyOneInFlightArgs): Promise<ScenarioResult> {
  const { flags, portkey } = args;
  const targets: Record<ComparisonPath, RequestTarget> = { ...args.chat, portkey: portkeyChatTarget(portkey) };
  const clients = byKey(comparisonPaths, (path) => createTimedClient(targets[path], 1));
  const processes = { ...args.processes, portkey: portkey.pid };
  try {
    await verifyChatPaths(clients);
    await verifyPortkeyPath(clients.portkey);

    args.progress(`${portkeyScenarioName}: warm-up, ${flags.warmup} requests per path`);
    await warmUpInterleaved(clients, comparisonPaths, flags.warmup, flags.block);

    args.progress(`${portkeyScenarioName}: ${flags.requests} requests per path in blocks of ${flags.block}`);
    const answeredBefore = await args.upstream.answered();
    const run = await measureInterleaved(clients, comparisonPaths, { requests: flags.requests, block: flags.block, processes });
    // Every request on every path must have reached the upstream: no error path, cache or retry.
    const reached = (await args.upstream.answered()) - answeredBefore;
    if (reached !== comparisonPaths.length * flags.requests) {
      throw new Error(`upstream answered ${reached} requests, expected ${comparisonPaths.length * flags.requests}`);
    }

    const latency = byKey(comparisonPaths, (path) => roundedSummary(summarize(run.histograms[path])));
    const added = {
      gateway: roundedDifference(percentileDifference(latency.gateway, latency.direct)),
      portkey: roundedDifference(percentileDifference(latency.portkey, latency.direct)),
    };
    const ratio = addedRatio(added.portkey, added.gateway);
    const cpu = byKey(comparisonPaths, (path) => cpuPerRequest(run.cpu[path], flags.requests));
    return {
      name: portkeyScenarioName,
      tables: [latencyTable(latency, added, ratio, args), cpuTable(cpu)],
      notes: comparisonPaths.flatMap((path) => driftWarning(path, run.halves[path]) ?? []),
      data: {
        portkey: { package: portkeyPackage, version: portkey.version, command: portkey.command.join(" ") },
        requestsPerPath: flags.requests,
        warmupPerPath: flags.warmup,
        blockSize: flags.block,
        durationMs: Math.round(run.durationMs),
        latencyMs: latency,
        gatewayMinusDirectMs: added.gateway,
        portkeyMinusDirectMs: added.portkey,
        portkeyAddedOverGatewayAdded: ratio,
        cpuMicrosPerRequest: cpu,
        halvesP50Ms: run.halves,
        histogramsMicros: byKey(comparisonPaths, (path) => encodeHistogram(run.histograms[path])),
      } satisfies Json,
    };
  } finally {
    await Promise.all(comparisonPaths.map((path) => clients[path].close()));
  }
}

/**
 * The comparison as a scenario for main.ts: starts Portkey (installing it on first use) against the
 * benchmark's upstream, measures, and stops it before the next scenario. The teardown is registered
 * with `cleanup` before the start finishes, so an interrupt never leaves Portkey running.
 */
export function portkeyComparison(options: { upstreamKey: string; cleanup: Cleanup; version?: string; env?: Record<string, string> }): Scenario {
  return {
    name: portkeyScenarioName,
    async run(ctx) {
      ctx.progress(`${portkeyScenarioName}: starting ${portkeyPackage}`);
      const start = startPortkey({
        upstreamURL: ctx.upstream.url,
        upstreamKey: options.upstreamKey,
        version: options.version,
        env: options.env,
        progress: ctx.progress,
      });
      options.cleanup.add("portkey", async () => {
        const started = await start.catch(() => undefined);
        const code = await started?.stop();
        if (started && code !== 0) throw new Error(`portkey exited with ${code}\n${started.output()}`);
      });
      const portkey = await start;
      try {
        if (options.cleanup.stopping) throw new Error("interrupted");
        const oneInFlight = await measurePortkeyOneInFlight({ ...ctx, portkey });
        ctx.progress(`${portkeyScenarioName}: capacity search against Portkey`);
        const capacity = await measurePortkeyCapacity(portkeyChatTarget(portkey), ctx);
        return {
          ...oneInFlight,
          tables: [...oneInFlight.tables, capacity.table],
          data: { ...(oneInFlight.data as Record<string, Json>), capacity: capacity.data },
        };
      } finally {
        await portkey.stop();
      }
    },
  };
}

type Difference = Record<PercentileKey, number>;

function roundedDifference(d: Difference): Difference {
  return { p50: round3(d.p50), p90: round3(d.p90), p99: round3(d.p99) };
}

/**
 * Portkey's added latency over the gateway's, per percentile (2 decimals); null where the gateway
 * added nothing measurable, since a ratio over zero or a negative difference means nothing.
 */
export function addedRatio(portkey: Difference, gateway: Difference): Record<PercentileKey, number | null> {
  const ratio = (key: PercentileKey) => (gateway[key] > 0 ? Math.round((portkey[key] / gateway[key]) * 100) / 100 : null);
  return { p50: ratio("p50"), p90: ratio("p90"), p99: ratio("p99") };
}

function latencyTable(
  latency: Record<ComparisonPath, LatencySummary>,
  added: Record<"gateway" | "portkey", Difference>,
  ratio: Record<PercentileKey, number | null>,
  args: PortkeyOneInFlightArgs,
): Table {
  const { flags } = args;
  const row = (label: string, s: LatencySummary) => [label, formatMs(s.p50), formatMs(s.p90), formatMs(s.p99), formatMs(s.max), formatMs(s.mean)];
  const percentiles = reportedPercentiles.map((p) => `p${p}` as const);
  const difference = (label: string, d: Difference) => [label, ...percentiles.map((key) => formatMs(d[key], true)), "", ""];
  return {
    title: `one request in flight, gateway and Portkey ${args.portkey.version}: ${flags.requests} per path, blocks of ${flags.block}, after ${flags.warmup} warm-up (ms)`,
    columns: ["path", "p50", "p90", "p99", "max", "mean"],
    rows: [
      row("direct", latency.direct),
      row("gateway", latency.gateway),
      row("portkey", latency.portkey),
      difference("gateway − direct", added.gateway),
      difference("portkey − direct", added.portkey),
      ["portkey added ÷ gateway added", ...percentiles.map((key) => (ratio[key] === null ? "n/a" : `${ratio[key]?.toFixed(2)}×`)), "", ""],
    ],
  };
}

function cpuTable(perPath: Record<ComparisonPath, Record<string, number>>): Table {
  const own = new Set(["bench", "upstream", "portkey"]);
  const row = (path: ComparisonPath) => {
    const values = perPath[path];
    const services = Object.entries(values).reduce((sum, [name, micros]) => (own.has(name) ? sum : sum + micros), 0);
    return [path, values.bench ?? 0, values.upstream ?? 0, services, values.portkey ?? 0];
  };
  return {
    title: "CPU per request (µs; bench = the client; gateway = its four services; /proc readings in 10 ms ticks)",
    columns: ["path", "bench", "upstream", "gateway", "portkey"],
    rows: comparisonPaths.map(row),
  };
}
