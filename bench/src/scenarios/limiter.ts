import { createClient } from "redis";

type Redis = ReturnType<typeof createClient>;
import { RedisLimiter } from "@gw/ingress";
import { createLogger } from "@gw/logger";
import { testRedisUrl, uniquePrefix } from "@gw/testkit";
import { createLatencyHistogram, microsSince, summarize, type LatencySummary } from "../histogram";
import { createTimedClient } from "../http-client";
import { formatMs, type Table } from "../report";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

const CALLS = 5_000;
const WARMUP = 1_000;
const GATEWAY_REQUESTS = 500;

/**
 * The rate limiter's cost per request: the latency of one admission (the only limiter work on the
 * request path: one EVALSHA that checks and charges both scopes) against a bare PING to the same
 * Redis, and how many Redis commands each gateway request really sends.
 */
export const limiter: Scenario = {
  name: "limiter",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const url = await testRedisUrl();
    const redis: Redis = createClient({ url });
    await redis.connect();
    const limiterClient = new RedisLimiter({
      url,
      prefix: uniquePrefix("bench"),
      windowMs: 60_000,
      buckets: 60,
      timeoutMs: 5_000,
      logger: createLogger({ service: "bench", level: "silent" }),
    });
    limiterClient.connect();
    try {
      await waitReady(limiterClient);
      const request = (i: number) => ({
        workspaceId: "ws_bench",
        keyId: `key_bench_${i % 4}`,
        workspace: { requests: 1e9, tokens: 1e12 },
        key: { requests: 1e9, tokens: 1e12 },
        tokens: 1100,
      });
      ctx.progress(`limiter: ${CALLS} admissions and ${CALLS} PINGs, one at a time, after ${WARMUP} warm-up`);
      const admit = createLatencyHistogram();
      const ping = createLatencyHistogram();
      for (let i = 0; i < WARMUP + CALLS; i++) {
        let t = process.hrtime.bigint();
        await limiterClient.admit(request(i));
        if (i >= WARMUP) admit.recordValue(microsSince(t));
        t = process.hrtime.bigint();
        await redis.ping();
        if (i >= WARMUP) ping.recordValue(microsSince(t));
      }

      ctx.progress(`limiter: Redis commands per gateway request, over ${GATEWAY_REQUESTS} requests`);
      const before = await commandCalls(redis);
      const http = createTimedClient(ctx.chat.gateway, 1);
      try {
        for (let i = 0; i < GATEWAY_REQUESTS; i++) await http.timed();
      } finally {
        await http.close();
      }
      await new Promise((r) => setTimeout(r, 200)); // settlements run after each answer
      const after = await commandCalls(redis);
      const perRequest = Object.fromEntries(
        Object.entries(after)
          .map(([cmd, n]) => [cmd, (n - (before[cmd] ?? 0) - (cmd === "info" ? 1 : 0)) / GATEWAY_REQUESTS] as const)
          .filter(([, n]) => n > 0),
      );
      const a = summarize(admit);
      const p = summarize(ping);
      return {
        name: "limiter",
        tables: [latencyTable(a, p), commandsTable(perRequest)],
        notes: [],
        data: {
          calls: CALLS,
          admitMs: round(a),
          pingMs: round(p),
          admitMinusPingMs: { p50: r3(a.p50 - p.p50), p99: r3(a.p99 - p.p99) },
          redisCommandsPerGatewayRequest: perRequest,
        } satisfies Json,
      };
    } finally {
      await limiterClient.close();
      redis.destroy();
    }
  },
};

async function waitReady(l: RedisLimiter): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      await l.ping();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  throw new Error("Redis did not answer");
}

/** `INFO commandstats` as {command: calls}. */
async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const text = await redis.info("commandstats");
  const calls: Record<string, number> = {};
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1] as string] = Number(m[2]);
  return calls;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;
const round = (s: LatencySummary) => ({ p50: r3(s.p50), p90: r3(s.p90), p99: r3(s.p99), max: r3(s.max) });

function latencyTable(admit: LatencySummary, ping: LatencySummary): Table {
  const row = (label: string, s: LatencySummary) => [label, formatMs(s.p50), formatMs(s.p90), formatMs(s.p99)];
  return {
    title: `rate limiter: one admission (EVALSHA, both scopes) against a PING, ${CALLS} each, one at a time (ms)`,
    columns: ["call", "p50", "p90", "p99"],
    rows: [
      row("admit", admit),
      row("ping", ping),
      ["admit − ping", formatMs(admit.p50 - ping.p50, true), formatMs(admit.p90 - ping.p90, true), formatMs(admit.p99 - ping.p99, true)],
    ],
  };
}

function commandsTable(perRequest: Record<string, number>): Table {
  return {
    title: "Redis commands per gateway request (admission on the request path; settlement after the answer)",
    columns: ["command", "per request"],
    rows: Object.entries(perRequest).map(([cmd, n]) => [cmd, n.toFixed(2)]),
  };
}
