import { wholeMicros } from "@gw/contracts";
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
const UNIQUE_VIOLATION = "23505";
const LINE_KEY = "workspace_id, hour, kind, name, item, unit, unit_price_usd, price_version";

/**
 * Where each value sits in a record's JSON array (batchJson writes them in this order): positions,
 * not names, halve the bytes serialised, sent and parsed per record.
 */
const FIELDS = [
  "request_id",
  "started_at",
  "workspace_id",
  "key_id",
  "route",
  "model",
  "provider",
  "upstream_model",
  "attempts",
  "status",
  "error_type",
  "stream",
  "job_id",
  "duration_ms",
  "ttft_ms",
  "upstream_ms",
  "input_tokens",
  "output_tokens",
  "cached_input_tokens",
  "cache_write_tokens",
  "reasoning_tokens",
  "units",
  "cost_usd",
  "price_version",
  "bucket",
  "kind",
  "name",
  "lines",
] as const;
const at = (field: (typeof FIELDS)[number]): number => FIELDS.indexOf(field);
/** A record's value at its position, as the column type. */
const cast = (field: (typeof FIELDS)[number], type = "text"): string => `(e->>${at(field)})::${type} AS ${field}`;
/**
 * A duration sent in whole microseconds, as milliseconds: the quotient is the double nearest the
 * exact value, as parsing its decimal text would give.
 */
const castMicros = (field: (typeof FIELDS)[number]): string => `(e->>${at(field)})::float8 / 1000 AS ${field}`;

/**
 * One statement per batch, whatever its size: one round trip, and atomic without BEGIN and COMMIT.
 * The batch is one JSON array (an array per record, its priced lines nested as arrays), read with
 * jsonb_array_elements: serialising it is one native JSON.stringify, where parallel arrays cost the
 * driver a conversion per value. The records are inserted; then, from the rows inserted, the two
 * hourly roll-ups, the statement lines and any price not yet in price_versions, summed by key in SQL
 * (exact numeric sums) and upserted in key order, so concurrent batches lock shared rows in the same
 * order.
 *
 * `skipDuplicates` picks how a record already in the ledger (a redelivery) is met. Without it the insert
 * fails on the first one, and with it the whole statement (SQLSTATE 23505): every row of the batch
 * was inserted or none was, so the roll-ups read the batch itself. With it the insert skips such
 * records and the roll-ups read exactly the rows inserted (RETURNING, joined back to the batch), and
 * the statement answers the batch positions not inserted. That skip costs Postgres a probe of the
 * key before each insert and two joins, about a tenth of its work per record, for what only a crash
 * or a lost ack brings.
 */
function writeBatch(skipDuplicates: boolean): string {
  // The rows the insert inserted: all of the batch (once it is in), or those RETURNING names.
  const inserted = skipDuplicates ? "fresh" : "(src CROSS JOIN done)";
  return `
WITH src AS (
  -- started_at comes as epoch milliseconds: interval arithmetic is in whole microseconds, so exact.
  SELECT t.i, ${cast("request_id")}, timestamptz 'epoch' + (e->>${at("started_at")})::int8 * interval '1 millisecond' AS started_at,
    ${cast("workspace_id")}, ${cast("key_id")}, ${cast("route")}, ${cast("model")}, ${cast("provider")}, ${cast("upstream_model")},
    ${cast("attempts", "int4")}, ${cast("status", "int2")}, ${cast("error_type")}, ${cast("stream", "bool")}, ${cast("job_id")},
    ${castMicros("duration_ms")}, ${castMicros("ttft_ms")}, ${castMicros("upstream_ms")}, ${cast("input_tokens", "int8")},
    ${cast("output_tokens", "int8")}, ${cast("cached_input_tokens", "int8")}, ${cast("cache_write_tokens", "int8")},
    ${cast("reasoning_tokens", "int8")}, nullif(nullif(e->${at("units")}, 'null'), '{}') AS units, ${cast("cost_usd", "numeric")},
    ${cast("price_version")}, ${cast("bucket", "int2")}, ${cast("kind")}, ${cast("name")}, e->${at("lines")} AS lines
  FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, i)
), ins AS (
  INSERT INTO usage.records (${RECORD_COLUMNS})
  SELECT ${RECORD_COLUMNS} FROM src
  ${
    skipDuplicates
      ? `ON CONFLICT DO NOTHING
  RETURNING request_id, started_at, workspace_id, key_id, model, provider, route, status, price_version, input_tokens, output_tokens,
    cached_input_tokens, cache_write_tokens, reasoning_tokens, cost_usd
), fresh AS (
  SELECT ins.*, src.bucket, src.kind, src.name, src.lines FROM ins JOIN src USING (request_id, started_at)`
      : `RETURNING 1
), done AS (
  -- Read by each roll-up, so that every record is inserted before any roll-up row is locked (an
  -- unread insert would run last): both statements then lock in one order, records first.
  SELECT count(*) FROM ins`
  }
), hourly AS (
  INSERT INTO usage.hourly AS h (workspace_id, hour, key_id, model, provider, route, status, price_version, requests, errors,
    input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens, unpriced, cost_usd, latency)
  SELECT ${HOURLY_KEY}, ${SUMS}
  FROM ${inserted}
  GROUP BY ${HOURLY_KEY}
  ORDER BY ${HOURLY_KEY}
  ON CONFLICT (workspace_id, hour, key_id, model, provider, route, status, price_version) DO UPDATE SET ${ADD_SUMS}
  RETURNING 1
), models AS (
  INSERT INTO usage.hourly_models AS h (workspace_id, hour, model, requests, errors, input_tokens, output_tokens, cached_input_tokens,
    cache_write_tokens, reasoning_tokens, unpriced, cost_usd, latency)
  SELECT ${MODEL_KEY}, ${SUMS}
  FROM ${inserted}
  GROUP BY ${MODEL_KEY}
  ORDER BY ${MODEL_KEY}
  ON CONFLICT (workspace_id, hour, model) DO UPDATE SET ${ADD_SUMS}
  RETURNING 1
), line_sums AS (
  SELECT f.workspace_id, date_trunc('hour', f.started_at) AS hour, f.kind, f.name, l.item, l.unit, l.unit_price_usd,
    coalesce(f.price_version, '') AS price_version, sum(l.units) AS units, sum(l.amount_usd) AS amount_usd
  FROM ${inserted} f CROSS JOIN LATERAL (
    -- A line is [item, units, unit, unit_price_usd, amount_usd], the pricer's fields in order.
    SELECT l->>0 AS item, (l->>1)::numeric AS units, l->>2 AS unit, (l->>3)::numeric AS unit_price_usd, (l->>4)::numeric AS amount_usd
    FROM jsonb_array_elements(f.lines) AS l
  ) AS l
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
${
  skipDuplicates
    ? "SELECT i::int4 FROM src WHERE NOT EXISTS (SELECT FROM ins WHERE ins.request_id = src.request_id AND ins.started_at = src.started_at)"
    : "SELECT NULL::int4 AS i WHERE false"
}`;
}
// Named, so each connection prepares them once: parsing and planning a statement this long was about
// a tenth of Postgres's CPU a record (write-batch.ts).
const WRITE_BATCH = writeBatch(false);
const WRITE_BATCH_SKIPPING = writeBatch(true);
/** After a batch met a record already written, batches skip such records for this long: redeliveries come together. */
const SKIP_DUPLICATES_FOR_MS = 30_000;

/**
 * Writes batches of records with their roll-ups in one statement each, so a redelivered record is
 * never counted twice and a failed batch leaves nothing behind.
 */
export class LedgerWriter {
  private skipDuplicatesUntil = 0;
  private readonly skipDuplicatesForMs: number;

  constructor(
    private readonly db: Db,
    private readonly partitions: RecordPartitions,
    /** How long batches skip records already written once one has met one (30 s). */
    { skipDuplicatesForMs = SKIP_DUPLICATES_FOR_MS }: { skipDuplicatesForMs?: number } = {},
  ) {
    this.skipDuplicatesForMs = skipDuplicatesForMs;
  }

  /**
   * `skipDuplicates` takes the statement that skips records already written at once, instead of
   * after one has been met (the write-batch bench compares the two).
   */
  async write(batch: readonly LedgerRow[], { skipDuplicates = false }: { skipDuplicates?: boolean } = {}): Promise<WriteResult> {
    // In key order: two batches sharing records (a redelivery beside its first copy) then wait on
    // each other's rows in one order, and never deadlock. Two copies of one record in a batch
    // (redelivered while the first was waiting) are one row: the sort is stable, the first is kept.
    const rows: LedgerRow[] = [];
    for (const row of [...batch].sort(byKey)) {
      const last = rows[rows.length - 1];
      if (last === undefined || byKey(last, row) !== 0) rows.push(row);
    }
    await this.partitions.ensure(rows.map((r) => r.day));
    const params = [batchJson(rows), HISTOGRAM_BUCKETS];
    if (!skipDuplicates && Date.now() >= this.skipDuplicatesUntil) {
      try {
        await this.db.query(WRITE_BATCH, params, { name: "usage_write_batch" });
        return { inserted: rows, duplicates: batch.length - rows.length };
      } catch (err) {
        if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
        this.skipDuplicatesUntil = Date.now() + this.skipDuplicatesForMs;
      }
    }
    const { rows: skipped } = await this.db.query<{ i: number }>(WRITE_BATCH_SKIPPING, params, { name: "usage_write_batch_skipping" });
    let inserted = rows;
    if (skipped.length > 0) {
      const known = new Set(skipped.map((s) => s.i - 1));
      inserted = rows.filter((_, k) => !known.has(k));
    }
    return { inserted, duplicates: batch.length - inserted.length };
  }
}

/** The ledger's key order: request id, then start. */
function byKey(x: LedgerRow, y: LedgerRow): number {
  const a = x.record.request_id;
  const b = y.record.request_id;
  return a < b ? -1 : a > b ? 1 : x.record.started_at - y.record.started_at;
}

/** The batch as WRITE_BATCH reads it: an array per record, in FIELDS' order; null where a value is absent. */
function batchJson(rows: readonly LedgerRow[]): string {
  // Arrays filled by push, never made with new Array(n): JSON.stringify's fast path takes only
  // packed arrays, and a holey one is serialised element by element through property lookups.
  const items: unknown[][] = [];
  for (let k = 0; k < rows.length; k++) {
    const row = rows[k]!;
    const r = row.record;
    const o = r.outcome;
    const u = o?.usage;
    const lines: unknown[][] = [];
    for (const l of row.lines) lines.push([l.item, l.units, l.unit, l.unit_price_usd, l.amount_usd]);
    items.push([
      r.request_id,
      r.started_at,
      r.workspace_id,
      r.key_id,
      r.route,
      r.model ?? null,
      o?.provider ?? null,
      o?.upstream_model ?? null,
      o?.attempts ?? null,
      r.status,
      r.error_type ?? null,
      r.stream,
      r.job_id ?? null,
      // Whole microseconds: JSON writes an integer faster than a fraction (the batch's JSON took a
      // tenth less in a loop); castMicros turns them back.
      wholeMicros(r.duration_ms),
      o?.ttft_ms === undefined ? null : wholeMicros(o.ttft_ms),
      o?.upstream_ms === undefined ? null : wholeMicros(o.upstream_ms),
      u?.input_tokens ?? null,
      u?.output_tokens ?? null,
      u?.cached_input_tokens ?? null,
      u?.cache_write_tokens ?? null,
      u?.reasoning_tokens ?? null,
      o?.units ?? null,
      row.cost,
      row.priceVersion,
      bucketOf(r.duration_ms),
      row.kind,
      row.name,
      lines,
    ]);
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
