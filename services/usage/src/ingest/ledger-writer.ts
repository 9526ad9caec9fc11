import type { Db } from "@gw/db";
import { bucketOf, HISTOGRAM_BUCKETS } from "../histogram";
import type { RecordPartitions } from "../partitions";
import type { LedgerRow } from "./ledger-row";

export interface WriteResult {
  /** Rows the insert inserted; the others were already in the ledger (a redelivery). */
  inserted: LedgerRow[];
  duplicates: number;
}

const RECORD_COLUMNS = `request_id, started_at, workspace_id, key_id, route, model, provider, upstream_model, attempts, status,
  error_type, stream, job_id, duration_ms, ttft_ms, upstream_ms, input_tokens, output_tokens, cached_input_tokens,
  cache_write_tokens, reasoning_tokens, units, cost_usd, price_version`;

// The roll-up key, with '' for "none" (see the migration).
const HOURLY_KEY = `workspace_id, date_trunc('hour', started_at), key_id, coalesce(model, ''), coalesce(provider, ''), route, status,
  coalesce(price_version, '')`;
const MODEL_KEY = "workspace_id, date_trunc('hour', started_at), coalesce(model, '')";

// What every roll-up row sums, and how a row meets a batch's sums for its key.
const SUMS = `count(*), count(*) FILTER (WHERE status >= 400), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
  coalesce(sum(cached_input_tokens), 0), coalesce(sum(cache_write_tokens), 0), coalesce(sum(reasoning_tokens), 0),
  count(*) FILTER (WHERE cost_usd IS NULL), sum(cost_usd), usage.hist_of(array_agg(bucket), $2)`;
const ADD_SUMS = `
  requests = h.requests + excluded.requests,
  errors = h.errors + excluded.errors,
  input_tokens = h.input_tokens + excluded.input_tokens,
  output_tokens = h.output_tokens + excluded.output_tokens,
  cached_input_tokens = h.cached_input_tokens + excluded.cached_input_tokens,
  cache_write_tokens = h.cache_write_tokens + excluded.cache_write_tokens,
  reasoning_tokens = h.reasoning_tokens + excluded.reasoning_tokens,
  unpriced = h.unpriced + excluded.unpriced,
  cost_usd = CASE WHEN h.cost_usd IS NULL THEN excluded.cost_usd WHEN excluded.cost_usd IS NULL THEN h.cost_usd
                  ELSE h.cost_usd + excluded.cost_usd END,
  latency = usage.hist_add(h.latency, excluded.latency)`;
const LINE_KEY = "workspace_id, hour, kind, name, item, unit, unit_price_usd, price_version";

/**
 * One statement per batch, whatever its size: one round trip, and atomic without BEGIN and COMMIT.
 * The batch is one JSON array (one object per record, its priced lines nested), read with
 * json_to_recordset: serialising it is one native JSON.stringify, where parallel arrays cost the
 * driver a conversion per value. The records are inserted skipping those already there; then, from
 * exactly the rows inserted (RETURNING), the two hourly roll-ups, the statement lines and any price
 * not yet in price_versions, summed by key in SQL (exact numeric sums) and upserted in key order, so
 * concurrent batches lock shared rows in the same order. It answers the batch positions not inserted.
 */
const WRITE_BATCH = `
WITH src AS (
  -- started_at comes as epoch milliseconds: interval arithmetic is in whole microseconds, so exact.
  SELECT ordinality AS i, request_id, timestamptz 'epoch' + started_at * interval '1 millisecond' AS started_at, workspace_id, key_id,
    route, model, provider, upstream_model, attempts, status, error_type, stream, job_id, duration_ms, ttft_ms, upstream_ms,
    input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens, nullif(units::jsonb, '{}') AS units, cost_usd,
    price_version, bucket, kind, name, lines
  FROM ROWS FROM (json_to_recordset($1::json) AS (request_id text, started_at int8, workspace_id text, key_id text,
    route text, model text, provider text, upstream_model text, attempts int4, status int2, error_type text, stream bool, job_id text,
    duration_ms float8, ttft_ms float8, upstream_ms float8, input_tokens int8, output_tokens int8, cached_input_tokens int8,
    cache_write_tokens int8, reasoning_tokens int8, units json, cost_usd numeric, price_version text, bucket int2, kind text,
    name text, lines json)) WITH ORDINALITY
), ins AS (
  INSERT INTO usage.records (${RECORD_COLUMNS})
  SELECT ${RECORD_COLUMNS} FROM src
  ON CONFLICT DO NOTHING
  RETURNING request_id, started_at, workspace_id, key_id, model, provider, route, status, price_version, input_tokens, output_tokens,
    cached_input_tokens, cache_write_tokens, reasoning_tokens, cost_usd
), fresh AS (
  SELECT ins.*, src.bucket, src.kind, src.name, src.lines FROM ins JOIN src USING (request_id, started_at)
), hourly AS (
  INSERT INTO usage.hourly AS h (workspace_id, hour, key_id, model, provider, route, status, price_version, requests, errors,
    input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens, unpriced, cost_usd, latency)
  SELECT ${HOURLY_KEY}, ${SUMS}
  FROM fresh
  GROUP BY ${HOURLY_KEY}
  ORDER BY ${HOURLY_KEY}
  ON CONFLICT (workspace_id, hour, key_id, model, provider, route, status, price_version) DO UPDATE SET ${ADD_SUMS}
  RETURNING 1
), models AS (
  INSERT INTO usage.hourly_models AS h (workspace_id, hour, model, requests, errors, input_tokens, output_tokens, cached_input_tokens,
    cache_write_tokens, reasoning_tokens, unpriced, cost_usd, latency)
  SELECT ${MODEL_KEY}, ${SUMS}
  FROM fresh
  GROUP BY ${MODEL_KEY}
  ORDER BY ${MODEL_KEY}
  ON CONFLICT (workspace_id, hour, model) DO UPDATE SET ${ADD_SUMS}
  RETURNING 1
), line_sums AS (
  SELECT f.workspace_id, date_trunc('hour', f.started_at) AS hour, f.kind, f.name, l.item, l.unit, l.unit_price_usd,
    coalesce(f.price_version, '') AS price_version, sum(l.units) AS units, sum(l.amount_usd) AS amount_usd
  FROM fresh f CROSS JOIN LATERAL json_to_recordset(f.lines) AS l(item text, unit text, unit_price_usd numeric, units numeric, amount_usd numeric)
  GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
), lines AS (
  INSERT INTO usage.hourly_lines AS h (${LINE_KEY}, units, amount_usd)
  SELECT ${LINE_KEY}, units, amount_usd FROM line_sums
  ORDER BY ${LINE_KEY}
  ON CONFLICT (${LINE_KEY}) DO UPDATE SET
    units = h.units + excluded.units,
    amount_usd = h.amount_usd + excluded.amount_usd
  RETURNING 1
), prices AS (
  -- Trailing zeros trimmed (2.50 and 2.5 are one key): a price is stored in one spelling.
  INSERT INTO usage.price_versions (price_version, kind, name, item, unit, unit_price_usd)
  SELECT price_version, kind, name, item, unit, trim_scale(unit_price_usd)
  FROM (SELECT DISTINCT price_version, kind, name, item, unit, unit_price_usd FROM line_sums) AS p
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT DO NOTHING
  RETURNING 1
)
SELECT i::int4 FROM src WHERE NOT EXISTS (SELECT FROM ins WHERE ins.request_id = src.request_id AND ins.started_at = src.started_at)`;

/**
 * Writes batches of records with their roll-ups in one statement each, so a redelivered record is
 * never counted twice and a failed batch leaves nothing behind.
 */
export class LedgerWriter {
  constructor(
    private readonly db: Db,
    private readonly partitions: RecordPartitions,
  ) {}

  async write(batch: readonly LedgerRow[]): Promise<WriteResult> {
    // Two copies of one record in a batch (redelivered while the first was waiting) are one row.
    const unique = new Map<string, LedgerRow>();
    for (const row of batch) if (!unique.has(row.key)) unique.set(row.key, row);
    const rows = [...unique.values()];
    await this.partitions.ensure(rows.map((r) => r.day));
    const { rows: skipped } = await this.db.query<{ i: number }>(WRITE_BATCH, [batchJson(rows), HISTOGRAM_BUCKETS]);
    let inserted = rows;
    if (skipped.length > 0) {
      const known = new Set(skipped.map((s) => s.i - 1));
      inserted = rows.filter((_, k) => !known.has(k));
    }
    return { inserted, duplicates: batch.length - inserted.length };
  }
}

/** The batch as WRITE_BATCH reads it; an absent (undefined) field is left out, which reads as null. */
function batchJson(rows: readonly LedgerRow[]): string {
  const items = new Array<object>(rows.length);
  for (let k = 0; k < rows.length; k++) {
    const row = rows[k]!;
    const r = row.record;
    const o = r.outcome;
    const u = o?.usage;
    items[k] = {
      request_id: r.request_id,
      started_at: r.started_at,
      workspace_id: r.workspace_id,
      key_id: r.key_id,
      route: r.route,
      model: r.model,
      provider: o?.provider,
      upstream_model: o?.upstream_model,
      attempts: o?.attempts,
      status: r.status,
      error_type: r.error_type,
      stream: r.stream,
      job_id: r.job_id,
      duration_ms: r.duration_ms,
      ttft_ms: o?.ttft_ms,
      upstream_ms: o?.upstream_ms,
      input_tokens: u?.input_tokens,
      output_tokens: u?.output_tokens,
      cached_input_tokens: u?.cached_input_tokens,
      cache_write_tokens: u?.cache_write_tokens,
      reasoning_tokens: u?.reasoning_tokens,
      units: o?.units,
      cost_usd: row.cost,
      price_version: row.priceVersion,
      bucket: bucketOf(r.duration_ms),
      kind: row.kind,
      name: row.name,
      // The pricer's lines as they are: their fields are the columns line_sums reads.
      lines: row.lines,
    };
  }
  const json = JSON.stringify(items);
  // JSON escapes a lone UTF-16 surrogate (a client-chosen name can hold one) and Postgres refuses the
  // escape; sent as plain text it would become U+FFFD, so it does here too. An escaped backslash
  // followed by "ud" also matches, at the cost of the slower path only.
  return json.includes("\\ud") ? JSON.stringify(items, wellFormed) : json;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function wellFormed(_key: string, value: unknown): unknown {
  return typeof value === "string" ? value.replace(LONE_SURROGATE, "\uFFFD") : value;
}
