import { setTimeout as sleep } from "node:timers/promises";
import { baselineData, comparisonOf, measureAgainstBaseline } from "../baseline/against-baseline";
import type { BaselineMesh } from "../baseline/baseline-checkout";
import { baselineTables } from "../baseline/baseline-report";
import { percentileDifference, summarize } from "../histogram";
import { createTimedClient, type TimedClient } from "../http-client";
import { byKey, cpuPerRequest, measureInterleaved, round3, roundedSummary } from "../interleaved-run";
import { formatMs } from "../report";
import { chatPaths, verifyChatPaths, type ChatPath } from "../targets";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

/** Requests per path, each after the pause. */
const requestsPerPath = 300;
/** Quiet before every request: longer than this machine's idle CPUs take to halt. */
const pauseMs = 50;

/** The same client, quiet for `pauseMs` before each timed request (the pause is not timed). */
export function afterAPause(client: TimedClient, ms: number, wait: (ms: number) => Promise<unknown> = sleep): TimedClient {
  return {
    async timed() {
      await wait(ms);
      return client.timed();
    },
    once: () => client.once(),
    close: () => client.close(),
  };
}

/**
 * Scenario: requests after a pause. One-in-flight sends each request as soon as the last answer is
 * in, so every process on the path is awake and its code and data are in the caches; an
 * application's calls usually come further apart. Here every request, direct or through the
 * gateway, follows 50 ms of quiet, in which this machine's idle CPUs halt and other work displaces
 * the services' code from the caches; the paths alternate request by request.
 */
export const spaced: Scenario = {
  name: "spaced",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    if (ctx.baseline) return againstBaseline(ctx, ctx.baseline);
    const clients = byKey(chatPaths, (path) => createTimedClient(ctx.chat[path], 1));
    try {
      await verifyChatPaths(clients);
      ctx.progress(`spaced: ${requestsPerPath} requests per path, each after ${pauseMs} ms of quiet`);
      const paused = byKey(chatPaths, (path) => afterAPause(clients[path], pauseMs));
      const run = await measureInterleaved(paused, chatPaths, { requests: requestsPerPath, block: 1, processes: ctx.processes });
      const latency = byKey(chatPaths, (path) => roundedSummary(summarize(run.histograms[path])));
      const added = percentileDifference(latency.gateway, latency.direct);
      const row = (path: ChatPath) => [
        path,
        formatMs(latency[path].p50),
        formatMs(latency[path].p90),
        formatMs(latency[path].p99),
        formatMs(latency[path].max),
      ];
      return {
        name: "spaced",
        tables: [
          {
            title: `requests after a pause: ${requestsPerPath} per path, each after ${pauseMs} ms of quiet, paths alternating (ms)`,
            columns: ["path", "p50", "p90", "p99", "max"],
            rows: [row("direct"), row("gateway"), ["gateway − direct", formatMs(added.p50, true), formatMs(added.p90, true), formatMs(added.p99, true), ""]],
          },
        ],
        notes: [],
        data: {
          requestsPerPath,
          pauseMs,
          latencyMs: latency,
          gatewayMinusDirectMs: { p50: round3(added.p50), p90: round3(added.p90), p99: round3(added.p99) },
          cpuMicrosPerRequest: byKey(chatPaths, (path) => cpuPerRequest(run.cpu[path], requestsPerPath)),
        } satisfies Json,
      };
    } finally {
      await Promise.all(chatPaths.map((path) => clients[path].close()));
    }
  },
};

/** With --baseline: direct, gateway and the baseline's mesh, request by request in rotation. */
async function againstBaseline(ctx: BenchContext, baseline: BaselineMesh): Promise<ScenarioResult> {
  const run = await measureAgainstBaseline(ctx, baseline, {
    name: "spaced",
    requests: requestsPerPath,
    warmup: 0,
    block: 1,
    wrap: (client) => afterAPause(client, pauseMs),
  });
  const comparison = comparisonOf(run, requestsPerPath);
  const title = `requests after a pause: ${requestsPerPath} per path, each after ${pauseMs} ms of quiet, paths in rotation`;
  return {
    name: "spaced",
    tables: baselineTables(comparison, title, baseline),
    notes: [],
    data: { requestsPerPath, pauseMs, baseline: baselineData(baseline), ...comparison } satisfies Json,
  };
}
