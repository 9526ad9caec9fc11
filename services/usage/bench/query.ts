/**
 * How fast the ledger answers a month's per-day, per-model usage of a big workspace.
 *
 *   pnpm tsx services/usage/bench/query.ts [--records 10000000] [--runs 30] [--keep]
 *                                         [--reuse gw_usage_query_bench] [--database postgres://root@127.0.0.1:5432/postgres]
 *
 * Seeds one workspace with `--records` records over January 2025 straight in SQL (generate_series:
 * 8 keys, 6 models on their providers and routes, statuses mostly 200), builds the roll-ups and
 * statement lines from them as ingest would have, then times `GET /v1/usage?group_by=day,model`
 * for the month through the service's route (roll-ups), once cold and `--runs` times warm, and the
 * same question in Asia/Kolkata (raw records) and the month's statement once each. `--keep` leaves
 * the database (named gw_usage_query_bench) for `--reuse`, which skips seeding.
 */
import { parseArgs } from "node:util";
import { createInProcessBus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { createPgDb, runMigrations, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { HISTOGRAM_BUCKETS } from "../src/histogram";
import { RecordPartitions } from "../src/partitions";
import { operatorIdentity } from "../src/scope";
import { usageMigrations } from "../src/service";
import { benchSecret as secret, benchUsageService } from "./bench-db";

const { values: args } = parseArgs({
  options: {
    records: { type: "string", default: "10000000" },
    runs: { type: "string", default: "30" },
    keep: { type: "boolean", default: false },
    reuse: { type: "string" },
    database: { type: "string", default: process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/postgres" },
  },
});
const total = Number(args.records);
const DAYS = 31;
const logger = createLogger({ service: "usage-bench", level: "warn" });
const limits = { requests_per_minute: 1, tokens_per_minute: 1 };
const WORKSPACE = "ws_bench";

function databaseUrl(name: string): string {
  const url = new URL(args.database);
  url.pathname = `/${name}`;
  return url.toString();
}

const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);

/** The bucket of histogram.ts, in SQL (three per doubling from 1 ms). */
const BUCKET = `CASE WHEN duration_ms < 1 THEN 0 ELSE least(${HISTOGRAM_BUCKETS - 1}, floor(ln(duration_ms) / ln(2) * 3)::int + 1) END`;

async function seed(db: Db): Promise<void> {
  await runMigrations(db, { schema: "usage", dir: usageMigrations, logger });
  const partitions = new RecordPartitions(db);
  await partitions.ensure(Array.from({ length: DAYS }, (_, d) => `202501${String(d + 1).padStart(2, "0")}`));
  const perDay = Math.ceil(total / DAYS);
  const started = performance.now();
  for (let d = 0; d < DAYS; d++) {
    const day = new Date(Date.UTC(2025, 0, d + 1)).toISOString();
    // A hash of the row number stands in for randomness, so every run seeds the same data.
    await db.query(
      `INSERT INTO usage.records (request_id, started_at, workspace_id, key_id, route, model, provider, upstream_model, attempts, status,
         error_type, stream, job_id, duration_ms, ttft_ms, upstream_ms, input_tokens, output_tokens, cached_input_tokens,
         cache_write_tokens, reasoning_tokens, units, cost_usd, price_version)
       SELECT 'req_' || $3::int || '_' || g, $1::timestamptz + ((g - 1) * 86400000.0 / $2) * interval '1 millisecond', '${WORKSPACE}',
         'key_' || (h % 8), CASE WHEN m = 5 THEN '/v1/embeddings' WHEN m IN (2, 3) AND h % 3 = 0 THEN '/v1/messages' ELSE '/v1/chat/completions' END,
         (ARRAY['gpt-4o', 'gpt-4o-mini', 'claude-sonnet', 'claude-haiku', 'mistral-large', 'text-embedding-3-small'])[m + 1],
         (ARRAY['openai', 'openai', 'anthropic', 'anthropic', 'mistral', 'openai'])[m + 1],
         (ARRAY['gpt-4o-2024-08-06', 'gpt-4o-mini', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'mistral-large-latest', 'text-embedding-3-small'])[m + 1],
         1, s, CASE WHEN s >= 400 THEN 'server_error' END, h % 2 = 0, NULL,
         20 + (h % 4000) * (1 + m % 3) * 0.5, CASE WHEN h % 2 = 0 THEN 150 + h % 700 END, 15 + (h % 3900),
         100 + h % 6000, h % 900, CASE WHEN h % 4 = 0 THEN 64 END, NULL, CASE WHEN m IN (0, 2) THEN h % 200 END, NULL,
         ((100 + h % 6000) * 2.5 + (h % 900) * 10) / 1000000.0, 'config:bench'
       FROM generate_series(1, $2::int) g,
         LATERAL (SELECT abs(hashint4(g + $3::int * 10000000)) AS h) x,
         LATERAL (SELECT (h / 7) % 6 AS m, CASE WHEN h % 100 < 94 THEN 200 WHEN h % 100 < 96 THEN 429 WHEN h % 100 < 97 THEN 500
                                                 WHEN h % 100 < 99 THEN 400 ELSE 499 END AS s) y`,
      [day, perDay, d],
    );
  }
  console.log(`seeded ${DAYS * perDay} records in ${seconds(started)} s`);
  const rollups = performance.now();
  for (let d = 0; d < DAYS; d++) {
    const range = [new Date(Date.UTC(2025, 0, d + 1)), new Date(Date.UTC(2025, 0, d + 2))];
    await db.query(
      `INSERT INTO usage.hourly (workspace_id, hour, key_id, model, provider, route, status, price_version, requests, errors,
         input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens, unpriced, cost_usd, latency)
       SELECT workspace_id, date_trunc('hour', started_at), key_id, coalesce(model, ''), coalesce(provider, ''), route, status,
         coalesce(price_version, ''), count(*), count(*) FILTER (WHERE status >= 400), coalesce(sum(input_tokens), 0),
         coalesce(sum(output_tokens), 0), coalesce(sum(cached_input_tokens), 0), coalesce(sum(cache_write_tokens), 0),
         coalesce(sum(reasoning_tokens), 0), count(*) FILTER (WHERE cost_usd IS NULL), sum(cost_usd),
         usage.hist_of(array_agg((${BUCKET})::int2), ${HISTOGRAM_BUCKETS})
       FROM usage.records WHERE started_at >= $1 AND started_at < $2
       GROUP BY 1, 2, 3, 4, 5, 6, 7, 8`,
      range,
    );
    await db.query(
      `INSERT INTO usage.hourly_models (workspace_id, hour, model, requests, errors, input_tokens, output_tokens, cached_input_tokens,
         cache_write_tokens, reasoning_tokens, unpriced, cost_usd, latency)
       SELECT workspace_id, date_trunc('hour', started_at), coalesce(model, ''), count(*), count(*) FILTER (WHERE status >= 400),
         coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cached_input_tokens), 0),
         coalesce(sum(cache_write_tokens), 0), coalesce(sum(reasoning_tokens), 0), count(*) FILTER (WHERE cost_usd IS NULL),
         sum(cost_usd), usage.hist_of(array_agg((${BUCKET})::int2), ${HISTOGRAM_BUCKETS})
       FROM usage.records WHERE started_at >= $1 AND started_at < $2
       GROUP BY 1, 2, 3`,
      range,
    );
    await db.query(
      `INSERT INTO usage.hourly_lines (workspace_id, hour, kind, name, item, unit, unit_price_usd, price_version, units, amount_usd)
       SELECT workspace_id, date_trunc('hour', started_at), 'model', model, i.item, '1M tokens', i.price, price_version, sum(i.units),
         sum(i.units * i.price / 1000000)
       FROM usage.records,
         LATERAL (VALUES ('input_tokens', input_tokens, 2.5), ('output_tokens', output_tokens, 10)) AS i(item, units, price)
       WHERE started_at >= $1 AND started_at < $2 AND i.units > 0
       GROUP BY 1, 2, 3, 4, 5, 6, 7, 8`,
      range,
    );
  }
  // One statement per call: a multi-statement string runs as one transaction, which VACUUM refuses.
  for (const table of ["usage.hourly", "usage.hourly_models", "usage.hourly_lines", "usage.records"]) await db.exec(`VACUUM ANALYZE ${table}`);
  console.log(`roll-ups built in ${seconds(rollups)} s`);
}

async function main(): Promise<void> {
  const name = args.reuse ?? (args.keep ? "gw_usage_query_bench" : `gw_usage_query_bench_${Date.now().toString(36)}`);
  const admin = createPgDb({ url: args.database, max: 1, applicationName: "gw-usage-bench-admin" });
  if (!args.reuse) {
    await admin.exec(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.exec(`CREATE DATABASE "${name}"`);
  }
  const db = createPgDb({ url: databaseUrl(name), applicationName: "gw-usage-bench" });
  const bus = createInProcessBus({ logger });
  try {
    if (!args.reuse) await seed(db);
    const counts = await db.query<{ records: string; hourly: string; models: string }>(
      `SELECT (SELECT count(*) FROM usage.records) AS records, (SELECT count(*) FROM usage.hourly) AS hourly,
         (SELECT count(*) FROM usage.hourly_models) AS models`,
    );
    const c = counts.rows[0];
    console.log(`${c?.records} records; roll-up rows: ${c?.hourly} in hourly, ${c?.models} in hourly_models`);
    const gateway = GatewayConfig.parse({ plans: { plus: limits, pro: limits, enterprise: limits } });
    // The clock in February 2025: January has closed and is within retention.
    const service = benchUsageService({
      gateway,
      bus,
      db,
      logger,
      clock: () => Date.UTC(2025, 1, 10),
    });
    const { url } = await service.start();
    const headers = { "x-gw-identity": signIdentity(operatorIdentity, secret) };
    const time = async (path: string): Promise<{ ms: number; body: string; source: string | null }> => {
      const started = performance.now();
      const res = await fetch(`${url}${path}`, { headers });
      const body = await res.text();
      if (!res.ok) throw new Error(`${path}: ${res.status} ${body}`);
      return { ms: performance.now() - started, body, source: res.headers.get("usage-source") };
    };
    const question = `/v1/usage?workspace_id=${WORKSPACE}&from=2025-01-01&to=2025-02-01&group_by=day,model`;
    const cold = await time(question);
    const rows = (JSON.parse(cold.body) as { data: unknown[] }).data.length;
    const warm: number[] = [];
    for (let i = 0; i < Number(args.runs); i++) warm.push((await time(question)).ms);
    warm.sort((a, b) => a - b);
    const at = (q: number) => warm[Math.min(warm.length - 1, Math.floor(q * warm.length))]!.toFixed(1);
    console.log(
      `per-day per-model, January (${cold.source}, ${rows} rows): cold ${cold.ms.toFixed(1)} ms; warm p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, min ${at(0)} ms, max ${at(1)} ms over ${warm.length} runs`,
    );
    const byKey = await time(`/v1/usage?workspace_id=${WORKSPACE}&from=2025-01-01&to=2025-02-01&group_by=day,key`);
    console.log(`per-day per-key, January (full hourly roll-up): ${byKey.ms.toFixed(0)} ms`);
    const kolkata = await time(`${question}&tz=Asia/Kolkata`);
    console.log(`per-day per-model in Asia/Kolkata (${kolkata.source}): ${kolkata.ms.toFixed(0)} ms`);
    const logs = await time(`/v1/logs?workspace_id=${WORKSPACE}&limit=100`);
    const page = JSON.parse(logs.body) as { next_cursor: string };
    const next = await time(`/v1/logs?workspace_id=${WORKSPACE}&limit=100&cursor=${page.next_cursor}`);
    const everyone = await time("/v1/logs?limit=100");
    // A record from the middle of the month, one a small seed also has.
    const one = await time(`/v1/logs/req_14_${Math.min(1234, Math.ceil(total / DAYS))}`);
    console.log(
      `logs: a page of 100 ${logs.ms.toFixed(1)} ms, the next ${next.ms.toFixed(1)} ms, all workspaces ${everyone.ms.toFixed(1)} ms; one record by id ${one.ms.toFixed(1)} ms`,
    );
    const statement = await time(`/v1/workspaces/${WORKSPACE}/statement?month=2025-01`);
    const again = await time(`/v1/workspaces/${WORKSPACE}/statement?month=2025-01`);
    console.log(`statement of January: first (computed and frozen) ${statement.ms.toFixed(1)} ms, again (stored) ${again.ms.toFixed(1)} ms`);
    await service.stop();
  } finally {
    await bus.close();
    await db.close();
    if (!args.keep && !args.reuse) await admin.exec(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.close();
  }
}

await main();
