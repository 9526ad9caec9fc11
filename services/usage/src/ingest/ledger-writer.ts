import type { Db } from "@gw/db";
import { decimalOf } from "../decimal";
import { bucketOf, HISTOGRAM_BUCKETS } from "../histogram";
import type { RecordPartitions } from "../partitions";
import type { LedgerRow } from "./ledger-row";

export interface WriteResult {
  /** Rows the insert inserted; the others were already in the ledger (a redelivery). */
  inserted: LedgerRow[];
  duplicates: number;
}

/** A price a version was seen charging (a row of `usage.price_versions`), and its key in `seenPrices`. */
interface SeenPrice {
  key: string;
  price_version: string;
  kind: string;
  name: string;
  item: string;
  unit: string;
  unit_price_usd: string;
}

const iso = (at: number): string => new Date(at).toISOString();

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
  count(*) FILTER (WHERE cost_usd IS NULL), sum(cost_usd), usage.hist_of(array_agg(bucket), $35)`;
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
const LINE_KEY = `f.workspace_id, date_trunc('hour', f.started_at), l.kind, l.name, l.item, l.unit, l.unit_price_usd, coalesce(f.price_version, '')`;

/**
 * One statement per batch, whatever its size (one round trip, on pg and PGlite alike): the records
 * as a multi-row insert from parallel arrays (unnest) that skips those already there; then, from
 * exactly the rows it inserted (RETURNING), the two hourly roll-ups and the statement lines, summed by
 * key in SQL (exact numeric sums) and upserted in key order, so concurrent batches lock shared
 * roll-up rows in the same order. Measured against summing in JavaScript and upserting the sums in
 * further statements, this halved the time per batch (docs/usage-ledger.md).
 */
const WRITE_BATCH = `
WITH src AS (
  SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
    $9::int4[], $10::int2[], $11::text[], $12::bool[], $13::text[], $14::float8[], $15::float8[], $16::float8[], $17::int8[],
    $18::int8[], $19::int8[], $20::int8[], $21::int8[], $22::jsonb[], $23::numeric[], $24::text[], $25::int2[])
    AS s(${RECORD_COLUMNS}, bucket)
), ins AS (
  INSERT INTO usage.records (${RECORD_COLUMNS})
  SELECT ${RECORD_COLUMNS} FROM src
  ON CONFLICT DO NOTHING
  RETURNING request_id, started_at, workspace_id, key_id, model, provider, route, status, price_version, input_tokens, output_tokens,
    cached_input_tokens, cache_write_tokens, reasoning_tokens, cost_usd
), fresh AS (
  SELECT ins.*, src.bucket FROM ins JOIN src USING (request_id, started_at)
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
), lines AS (
  INSERT INTO usage.hourly_lines AS h (workspace_id, hour, kind, name, item, unit, unit_price_usd, price_version, units, amount_usd)
  SELECT ${LINE_KEY}, sum(l.units), sum(l.amount_usd)
  FROM unnest($26::text[], $27::timestamptz[], $28::text[], $29::text[], $30::text[], $31::text[], $32::numeric[], $33::numeric[],
    $34::numeric[]) AS l(request_id, started_at, kind, name, item, unit, unit_price_usd, units, amount_usd)
  JOIN ins f USING (request_id, started_at)
  GROUP BY ${LINE_KEY}
  ORDER BY ${LINE_KEY}
  ON CONFLICT (workspace_id, hour, kind, name, item, unit, unit_price_usd, price_version) DO UPDATE SET
    units = h.units + excluded.units,
    amount_usd = h.amount_usd + excluded.amount_usd
  RETURNING 1
)
SELECT request_id, (extract(epoch FROM started_at) * 1000)::int8 AS at FROM ins`;

const INSERT_PRICES = `
INSERT INTO usage.price_versions (price_version, kind, name, item, unit, unit_price_usd)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::numeric[])
ON CONFLICT DO NOTHING`;

/**
 * Writes batches of records with their roll-ups in one transaction each, so a redelivered record is
 * never counted twice and a failed batch leaves nothing behind.
 */
export class LedgerWriter {
  // Prices already known to be in usage.price_versions: most batches then write none.
  private readonly seenPrices = new Set<string>();

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
    let newPrices: SeenPrice[] = [];
    const inserted = await this.db.transaction(async (tx) => {
      const params = [...recordColumns(rows), ...lineColumns(rows), HISTOGRAM_BUCKETS];
      const { rows: returned } = await tx.query<{ request_id: string; at: string }>(WRITE_BATCH, params);
      const insertedKeys = new Set(returned.map((r) => `${r.request_id}\u0000${r.at}`));
      const fresh = rows.filter((row) => insertedKeys.has(row.key));
      newPrices = this.unseenPrices(fresh);
      if (newPrices.length > 0) await tx.query(INSERT_PRICES, priceColumns(newPrices));
      return fresh;
    });
    for (const price of newPrices) this.seenPrices.add(price.key);
    return { inserted, duplicates: batch.length - inserted.length };
  }

  private unseenPrices(rows: readonly LedgerRow[]): SeenPrice[] {
    const found = new Map<string, SeenPrice>();
    for (const row of rows) {
      for (const line of row.lines) {
        // Keyed on the price as the pricer wrote it, so a known price costs a lookup and nothing more.
        const key = `${row.priceVersion}\u0000${row.kind}\u0000${row.name}\u0000${line.item}\u0000${line.unit}\u0000${line.unit_price_usd}`;
        if (this.seenPrices.has(key) || found.has(key)) continue;
        found.set(key, {
          key,
          price_version: row.priceVersion ?? "",
          kind: row.kind,
          name: row.name,
          item: line.item,
          unit: line.unit,
          unit_price_usd: decimalOf(line.unit_price_usd),
        });
      }
    }
    return [...found.values()];
  }
}

function recordColumns(rows: readonly LedgerRow[]): unknown[][] {
  const cols: unknown[][] = Array.from({ length: 25 }, () => new Array<unknown>(rows.length));
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const r = row.record;
    const o = r.outcome;
    const u = o?.usage;
    cols[0]![i] = r.request_id;
    cols[1]![i] = iso(r.started_at);
    cols[2]![i] = r.workspace_id;
    cols[3]![i] = r.key_id;
    cols[4]![i] = r.route;
    cols[5]![i] = r.model ?? null;
    cols[6]![i] = o?.provider ?? null;
    cols[7]![i] = o?.upstream_model ?? null;
    cols[8]![i] = o?.attempts ?? null;
    cols[9]![i] = r.status;
    cols[10]![i] = r.error_type ?? null;
    cols[11]![i] = r.stream;
    cols[12]![i] = r.job_id ?? null;
    cols[13]![i] = r.duration_ms;
    cols[14]![i] = o?.ttft_ms ?? null;
    cols[15]![i] = o?.upstream_ms ?? null;
    cols[16]![i] = u?.input_tokens ?? null;
    cols[17]![i] = u?.output_tokens ?? null;
    cols[18]![i] = u?.cached_input_tokens ?? null;
    cols[19]![i] = u?.cache_write_tokens ?? null;
    cols[20]![i] = u?.reasoning_tokens ?? null;
    cols[21]![i] = o?.units && Object.keys(o.units).length > 0 ? JSON.stringify(o.units) : null;
    cols[22]![i] = row.cost;
    cols[23]![i] = row.priceVersion;
    cols[24]![i] = bucketOf(r.duration_ms);
  }
  return cols;
}

/** Every priced line of every record, keyed by its record: SQL keeps those of the inserted ones. */
function lineColumns(rows: readonly LedgerRow[]): unknown[][] {
  const cols: unknown[][] = Array.from({ length: 9 }, () => []);
  for (const row of rows) {
    for (const line of row.lines) {
      cols[0]!.push(row.record.request_id);
      cols[1]!.push(iso(row.record.started_at));
      cols[2]!.push(row.kind);
      cols[3]!.push(row.name);
      cols[4]!.push(line.item);
      cols[5]!.push(line.unit);
      cols[6]!.push(String(line.unit_price_usd));
      cols[7]!.push(String(line.units));
      cols[8]!.push(String(line.amount_usd));
    }
  }
  return cols;
}

function priceColumns(prices: readonly SeenPrice[]): unknown[][] {
  return [
    prices.map((p) => p.price_version),
    prices.map((p) => p.kind),
    prices.map((p) => p.name),
    prices.map((p) => p.item),
    prices.map((p) => p.unit),
    prices.map((p) => p.unit_price_usd),
  ];
}
