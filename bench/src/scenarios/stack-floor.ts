import { fileURLToPath } from "node:url";
import { testRedisUrl } from "@gw/testkit";
import { createLatencyHistogram, summarize } from "../histogram";
import { createTimedClient, type RequestTarget, type TimedClient } from "../http-client";
import { interleaveBlocks } from "../interleave";
import { spawnListening, type ListeningChild } from "../listening-child";
import { accumulateCpu, readCpu, type CpuReading } from "../process-cpu";
import { formatMs, type Table } from "../report";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

const paths = ["direct", "tcp relay", "node proxy", "stack proxy, express's server", "stack proxy", "2 stack hops", "2 stack hops + Redis", "gateway"] as const;
type FloorPath = (typeof paths)[number];
/** The proxy both two-hop chains forward to: the second hop, as inference is the mesh's. */
const secondHop = "second hop";
const chains: ReadonlySet<FloorPath> = new Set(["2 stack hops", "2 stack hops + Redis"]);
const REQUESTS = 2_000;
const WARMUP = 1_000;
const BLOCK = 100;

/**
 * What one hop costs before any gateway work: the same chat request straight to the upstream,
 * through a relay that only moves bytes between two sockets (the machine's own price for a process
 * hop, under any HTTP proxy), through a bare node:http proxy, and through a bare proxy on the
 * gateway's fixed stack (express reading the body, http-proxy-middleware forwarding it) served as
 * the gateway serves it and as express serves itself, one at a time in interleaved blocks, with
 * each proxy's CPU per request. The gateway's request makes two such hops (ingress → inference,
 * inference → upstream) and a Redis call, so two chained stack proxies, the first also making a
 * Redis round trip, are the floor of the mesh's own shape: what it would add with none of our work.
 * The gateway itself runs in the same rotation, so its distance from that floor is measured, not
 * pieced together from separate runs.
 */
export const stackFloor: Scenario = {
  name: "stack-floor",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const entry = fileURLToPath(new URL("../floor/floor-proxy-main.ts", import.meta.url));
    const upstream = new URL(ctx.chat.direct.origin);
    const proxies: Partial<Record<FloorPath | typeof secondHop, ListeningChild>> = {};
    const clients: Partial<Record<FloorPath, TimedClient>> = {};
    try {
      proxies["tcp relay"] = await spawnListening(entry, { FLOOR_KIND: "tcp", FLOOR_TARGET: upstream.origin });
      proxies["node proxy"] = await spawnListening(entry, { FLOOR_KIND: "node", FLOOR_TARGET: upstream.origin });
      proxies["stack proxy, express's server"] = await spawnListening(entry, { FLOOR_KIND: "stack-default", FLOOR_TARGET: upstream.origin });
      proxies["stack proxy"] = await spawnListening(entry, { FLOOR_KIND: "stack", FLOOR_TARGET: upstream.origin });
      // The second hop of both chains is a proxy of its own, so each chain's CPU is its two processes'.
      proxies[secondHop] = await spawnListening(entry, { FLOOR_KIND: "stack", FLOOR_TARGET: upstream.origin });
      proxies["2 stack hops"] = await spawnListening(entry, { FLOOR_KIND: "stack", FLOOR_TARGET: proxies[secondHop]!.url });
      proxies["2 stack hops + Redis"] = await spawnListening(entry, {
        FLOOR_KIND: "stack",
        FLOOR_TARGET: proxies[secondHop]!.url,
        FLOOR_REDIS_URL: await testRedisUrl(),
      });
      const targetOf = (path: FloorPath): RequestTarget =>
        path === "direct" || path === "gateway" ? ctx.chat[path] : { ...ctx.chat.direct, origin: proxies[path]!.url };
      for (const path of paths) clients[path] = createTimedClient(targetOf(path), 1);

      ctx.progress(`stack-floor: warm-up, ${WARMUP} requests per path`);
      for (const { path, count } of interleaveBlocks(paths, WARMUP, BLOCK)) for (let i = 0; i < count; i++) await clients[path]!.timed();

      ctx.progress(`stack-floor: ${REQUESTS} requests per path in blocks of ${BLOCK}`);
      const histograms = Object.fromEntries(paths.map((p) => [p, createLatencyHistogram()])) as Record<FloorPath, ReturnType<typeof createLatencyHistogram>>;
      const pids: Record<string, number> = {
        ...Object.fromEntries(Object.entries(proxies).map(([name, child]) => [name, child.pid])),
        ingress: ctx.gateway.pids.ingress!,
        inference: ctx.gateway.pids.inference!,
      };
      const cpu = Object.fromEntries(paths.map((p) => [p, {}])) as Record<FloorPath, CpuReading>;
      for (const { path, count } of interleaveBlocks(paths, REQUESTS, BLOCK)) {
        const before = readCpu(pids);
        for (let i = 0; i < count; i++) histograms[path].recordValue(await clients[path]!.timed());
        accumulateCpu(cpu[path], before, readCpu(pids));
      }

      const summaries = Object.fromEntries(paths.map((p) => [p, summarize(histograms[p])])) as Record<FloorPath, ReturnType<typeof summarize>>;
      const direct = summaries.direct;
      const cpuPerRequest = (path: FloorPath) => {
        if (path === "direct") return undefined;
        const parts = path === "gateway" ? ["ingress", "inference"] : chains.has(path) ? [path, secondHop] : [path];
        const used = parts.reduce((total, name) => total + (cpu[path][name] ?? 0), 0);
        return Math.round(used / REQUESTS);
      };
      // What the gateway adds over the bare shape of its mesh: our own work, and nothing else.
      const floor = summaries["2 stack hops + Redis"];
      const ownWork = { p50: summaries.gateway.p50 - floor.p50, p99: summaries.gateway.p99 - floor.p99 };
      const ownCpu = (cpuPerRequest("gateway") ?? 0) - (cpuPerRequest("2 stack hops + Redis") ?? 0);
      const table: Table = {
        title: `the gateway against the bare hops of its shape: ${REQUESTS} per path, blocks of ${BLOCK}, after ${WARMUP} warm-up (ms; CPU of the hops in µs per request)`,
        columns: ["path", "p50", "p99", "added p50", "added p99", "hops' CPU"],
        rows: [
          ...paths.map((path) => {
            const s = summaries[path];
            const added = path === "direct" ? ["", ""] : [formatMs(s.p50 - direct.p50, true), formatMs(s.p99 - direct.p99, true)];
            return [path, formatMs(s.p50), formatMs(s.p99), ...added, cpuPerRequest(path)?.toString() ?? ""];
          }),
          ["gateway − (2 stack hops + Redis)", "", "", formatMs(ownWork.p50, true), formatMs(ownWork.p99, true), String(ownCpu)],
        ],
      };
      const data = {
        ...Object.fromEntries(paths.map((p) => [p, { ...summaries[p], cpuMicrosPerRequest: cpuPerRequest(p) ?? null }])),
        gatewayMinusFloorMs: ownWork,
        gatewayMinusFloorCpuMicros: ownCpu,
      } as unknown as Json;
      return { name: "stack-floor", tables: [table], notes: [], data };
    } finally {
      await Promise.all(Object.values(clients).map((c) => c.close()));
      await Promise.all(Object.values(proxies).map((p) => p.stop()));
    }
  },
};
