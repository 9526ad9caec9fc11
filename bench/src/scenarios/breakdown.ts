import { existsSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { breakdownOf, type HookRow } from "../breakdown/segments";
import { createTimedClient } from "../http-client";
import { formatMs, type Table } from "../report";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

const SLOWEST_SHARE = 0.03;

/**
 * Where the gateway's time goes, one request at a time: the hook loaded into ingress and inference
 * (breakdown/hook.mjs) times each service's part from Node's and undici's diagnostics channels, and
 * the client's end-to-end time gives the rest. For each segment: the median, the p99, and the mean
 * over the slowest 3 % of requests, which shows whether slow requests are slow in the gateway's own
 * code or while waiting on another process. Runs only when named, as the hook adds a little work.
 */
export const breakdown: Scenario = {
  name: "breakdown",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const prefix = ctx.breakdownPrefix;
    if (!prefix) throw new Error("breakdown: the services were started without the breakdown hook");
    const { flags } = ctx;
    const pids = { ingress: ctx.gateway.pids.ingress!, inference: ctx.gateway.pids.inference! };
    const client = createTimedClient(ctx.chat.gateway, 1);
    try {
      ctx.progress(`breakdown: warm-up, ${flags.warmup} requests`);
      for (let i = 0; i < flags.warmup; i++) await client.timed();
      await collect(prefix, pids, 0); // drops the warm-up's rows

      ctx.progress(`breakdown: ${flags.requests} requests, one at a time`);
      const endToEnd: number[] = [];
      for (let i = 0; i < flags.requests; i++) endToEnd.push(await client.timed());
      const rows = await collect(prefix, pids, 1);
      const result = breakdownOf(endToEnd, rows.ingress, rows.inference, SLOWEST_SHARE);

      const table: Table = {
        title: `where the time goes, one request at a time: ${result.requests} requests after ${flags.warmup} warm-up (ms)`,
        columns: ["segment", "p50", "p99", "slowest 3 %, mean"],
        rows: result.segments.map((s) => [s.segment, formatMs(s.p50), formatMs(s.p99), formatMs(s.slowestMean)]),
      };
      return {
        name: "breakdown",
        tables: [table],
        notes: ["note: the breakdown hook was loaded into the services for this whole run, so every figure of the run includes its small cost"],
        data: { requests: result.requests, slowestShare: SLOWEST_SHARE, segmentsMs: result.segments as unknown as Json } satisfies Json,
      };
    } finally {
      await client.close();
    }
  },
};

/** Asks both services for their rows since the last dump (SIGUSR2) and reads them once written. */
async function collect(prefix: string, pids: { ingress: number; inference: number }, dump: number): Promise<{ ingress: HookRow[]; inference: HookRow[] }> {
  const read = async (pid: number): Promise<HookRow[]> => {
    process.kill(pid, "SIGUSR2");
    const file = `${prefix}${pid}-${dump}.json`;
    for (let waited = 0; !existsSync(file); waited += 20) {
      if (waited > 10_000) throw new Error(`breakdown: process ${pid} wrote no ${file}`);
      await sleep(20);
    }
    return JSON.parse(readFileSync(file, "utf8")) as HookRow[];
  };
  const [ingress, inference] = await Promise.all([read(pids.ingress), read(pids.inference)]);
  return { ingress, inference };
}
