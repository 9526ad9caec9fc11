import { fileURLToPath } from "node:url";
import { createLatencyHistogram, summarize } from "../histogram";
import { createTimedClient, type RequestTarget, type TimedClient } from "../http-client";
import { interleaveBlocks } from "../interleave";
import { spawnListening, type ListeningChild } from "../listening-child";
import { accumulateCpu, readCpu, type CpuReading } from "../process-cpu";
import { formatMs, type Table } from "../report";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

const paths = ["direct", "node proxy", "stack proxy"] as const;
type FloorPath = (typeof paths)[number];
const REQUESTS = 2_000;
const WARMUP = 1_000;
const BLOCK = 100;

/**
 * What one hop costs before any gateway work: the same chat request straight to the upstream,
 * through a bare node:http proxy, and through a bare proxy on the gateway's fixed stack (express
 * reading the body, http-proxy-middleware forwarding it), one at a time in interleaved blocks, with
 * each proxy's CPU per request. The gateway's request makes two such hops (ingress → inference,
 * inference → upstream) and a Redis call, so this puts its own figures in proportion.
 */
export const stackFloor: Scenario = {
  name: "stack-floor",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const entry = fileURLToPath(new URL("../floor/floor-proxy-main.ts", import.meta.url));
    const upstream = new URL(ctx.chat.direct.origin);
    const proxies: Partial<Record<FloorPath, ListeningChild>> = {};
    const clients: Partial<Record<FloorPath, TimedClient>> = {};
    try {
      proxies["node proxy"] = await spawnListening(entry, { FLOOR_KIND: "node", FLOOR_TARGET: upstream.origin });
      proxies["stack proxy"] = await spawnListening(entry, { FLOOR_KIND: "stack", FLOOR_TARGET: upstream.origin });
      const targetOf = (path: FloorPath): RequestTarget => (path === "direct" ? ctx.chat.direct : { ...ctx.chat.direct, origin: proxies[path]!.url });
      for (const path of paths) clients[path] = createTimedClient(targetOf(path), 1);

      ctx.progress(`stack-floor: warm-up, ${WARMUP} requests per path`);
      for (const { path, count } of interleaveBlocks(paths, WARMUP, BLOCK)) for (let i = 0; i < count; i++) await clients[path]!.timed();

      ctx.progress(`stack-floor: ${REQUESTS} requests per path in blocks of ${BLOCK}`);
      const histograms = Object.fromEntries(paths.map((p) => [p, createLatencyHistogram()])) as Record<FloorPath, ReturnType<typeof createLatencyHistogram>>;
      const pids = Object.fromEntries(paths.filter((p) => p !== "direct").map((p) => [p, proxies[p]!.pid]));
      const cpu: Record<FloorPath, CpuReading> = { direct: {}, "node proxy": {}, "stack proxy": {} };
      for (const { path, count } of interleaveBlocks(paths, REQUESTS, BLOCK)) {
        const before = readCpu(pids);
        for (let i = 0; i < count; i++) histograms[path].recordValue(await clients[path]!.timed());
        accumulateCpu(cpu[path], before, readCpu(pids));
      }

      const summaries = Object.fromEntries(paths.map((p) => [p, summarize(histograms[p])])) as Record<FloorPath, ReturnType<typeof summarize>>;
      const direct = summaries.direct;
      const cpuPerRequest = (path: FloorPath) => (path === "direct" ? undefined : Math.round((cpu[path][path] ?? 0) / REQUESTS));
      const table: Table = {
        title: `one hop before any gateway work: ${REQUESTS} per path, blocks of ${BLOCK}, after ${WARMUP} warm-up (ms; CPU in µs per request)`,
        columns: ["path", "p50", "p99", "added p50", "added p99", "proxy CPU"],
        rows: paths.map((path) => {
          const s = summaries[path];
          const added = path === "direct" ? ["", ""] : [formatMs(s.p50 - direct.p50, true), formatMs(s.p99 - direct.p99, true)];
          return [path, formatMs(s.p50), formatMs(s.p99), ...added, cpuPerRequest(path)?.toString() ?? ""];
        }),
      };
      const data = Object.fromEntries(paths.map((p) => [p, { ...summaries[p], cpuMicrosPerRequest: cpuPerRequest(p) ?? null }])) as unknown as Json;
      return { name: "stack-floor", tables: [table], notes: [], data };
    } finally {
      await Promise.all(Object.values(clients).map((c) => c.close()));
      await Promise.all(Object.values(proxies).map((p) => p.stop()));
    }
  },
};
