import type { Db } from "@gw/db";
import { GatewayError } from "@gw/errors";
import { decimalOf } from "../decimal";
import { HISTOGRAM_BUCKETS, percentile } from "../histogram";
import { formatInZone, isWholeHour, wholeHourOffsets, type UsageRow } from "@gw/contracts";

export type { UsageRow };
import type { GroupField, UsageParams } from "./params";

export type UsageSource = "rollups" | "records";

/** Where a group field comes from in each table; $TZ stands for the zone's parameter. */
const dimensions: Record<GroupField, { rollups: string; records: string; out: keyof UsageRow }> = {
  hour: { rollups: "hour", records: "date_trunc('hour', started_at, $TZ)", out: "hour" },
  day: { rollups: "to_char(hour AT TIME ZONE $TZ, 'YYYY-MM-DD')", records: "to_char(started_at AT TIME ZONE $TZ, 'YYYY-MM-DD')", out: "day" },
  month: { rollups: "to_char(hour AT TIME ZONE $TZ, 'YYYY-MM')", records: "to_char(started_at AT TIME ZONE $TZ, 'YYYY-MM')", out: "month" },
  model: { rollups: "model", records: "coalesce(model, '')", out: "model" },
  key: { rollups: "key_id", records: "key_id", out: "key_id" },
  provider: { rollups: "provider", records: "coalesce(provider, '')", out: "provider" },
  route: { rollups: "route", records: "route", out: "route" },
  status: { rollups: "status", records: "status", out: "status" },
};

/**
 * Percentiles are nearest-rank (the duration below which the share of requests finished), exact
 * from records and within a histogram bucket (about 12%) from roll-ups.
 *
 * Roll-ups answer when every bucket boundary is a UTC hour: `from` and `to` on whole hours, in a
 * zone whose offset is whole hours all along: the by-model one when the question needs no key,
 * provider, route or status, the full one otherwise. Anything else (a half-hour zone, a bound mid-hour)
 * reads the raw records: exact, and slower in proportion to the records it covers.
 */
export function sourceFor(q: Pick<UsageParams, "from" | "to" | "tz">): UsageSource {
  return isWholeHour(q.from) && isWholeHour(q.to) && wholeHourOffsets(q.tz, q.from, q.to) ? "rollups" : "records";
}

// Group fields the by-model roll-up holds: a question that needs nothing else reads it.
const modelRollupFields: readonly GroupField[] = ["hour", "day", "month", "model"];

/** The smallest roll-up that holds every field the question groups or filters by. */
function rollupTable(q: UsageParams): string {
  const byModel = q.keyId === undefined && q.groupBy.every((field) => modelRollupFields.includes(field));
  return byModel ? "usage.hourly_models" : "usage.hourly";
}

const latencySums = Array.from({ length: HISTOGRAM_BUCKETS }, (_, i) => `sum(latency[${i + 1}])`).join(", ");

const measures: Record<UsageSource, string> = {
  rollups: `sum(requests)::float8 AS requests, sum(errors)::float8 AS errors, sum(input_tokens)::float8 AS input_tokens,
    sum(output_tokens)::float8 AS output_tokens, sum(cached_input_tokens)::float8 AS cached_input_tokens,
    sum(reasoning_tokens)::float8 AS reasoning_tokens, sum(cost_usd)::text AS cost_usd,
    ARRAY[${latencySums}]::float8[] AS latency`,
  records: `count(*)::float8 AS requests, (count(*) FILTER (WHERE status >= 400))::float8 AS errors,
    coalesce(sum(input_tokens), 0)::float8 AS input_tokens, coalesce(sum(output_tokens), 0)::float8 AS output_tokens,
    coalesce(sum(cached_input_tokens), 0)::float8 AS cached_input_tokens, coalesce(sum(reasoning_tokens), 0)::float8 AS reasoning_tokens,
    sum(cost_usd)::text AS cost_usd, percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
    percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95`,
};

type Raw = Record<string, unknown> & { requests: number; cost_usd: string | null; latency?: number[]; p50?: number | null; p95?: number | null };

/** The usage of a period, grouped as asked, from roll-ups when they can answer (see sourceFor). */
export async function queryUsage(db: Db, q: UsageParams): Promise<{ data: UsageRow[]; source: UsageSource }> {
  const source = sourceFor(q);
  const table = source === "records" ? "usage.records" : rollupTable(q);
  const time = source === "rollups" ? "hour" : "started_at";
  const params: unknown[] = [new Date(q.from), new Date(q.to)];
  const where = [`${time} >= $1`, `${time} < $2`];
  const filter = (column: string, value: string | undefined) => {
    if (value === undefined) return;
    params.push(value);
    where.push(`${column} = $${params.length}`);
  };
  filter("workspace_id", q.workspaceId);
  filter("key_id", q.keyId);
  filter("model", q.model);
  let tzParam = "";
  const groups = q.groupBy.map((field, i) => {
    let expression = dimensions[field][source];
    if (expression.includes("$TZ")) {
      if (!tzParam) tzParam = `$${params.push(q.tz)}::text`;
      expression = expression.replaceAll("$TZ", tzParam);
    }
    return `${expression} AS g${i}`;
  });
  const positions = q.groupBy.map((_, i) => String(i + 1));
  const grouping = positions.length > 0 ? `GROUP BY ${positions.join(", ")} ORDER BY ${positions.join(", ")}` : "";
  const sql = `SELECT ${[...groups, measures[source]].join(", ")} FROM ${table} WHERE ${where.join(" AND ")} ${grouping}`;
  const { rows } = await db.query<Raw>(sql, params).catch((err: unknown) => {
    // Intl knew the zone but this Postgres's time zone data does not: the caller's to fix, not a 500.
    if ((err as { code?: unknown }).code === "22023" && /time zone/i.test(String((err as Error).message))) {
      throw new GatewayError("invalid_request", `Invalid query: tz: the database does not know the time zone ${q.tz}`, { param: "tz" });
    }
    throw err;
  });
  const data = rows.filter((row) => Number(row.requests) > 0).map((row) => toUsageRow(row, q, source));
  return { data, source };
}

function toUsageRow(row: Raw, q: UsageParams, source: UsageSource): UsageRow {
  const out: Record<string, unknown> = {};
  q.groupBy.forEach((field, i) => {
    const value = row[`g${i}`];
    const name = dimensions[field].out;
    if (field === "hour") out[name] = formatInZone((value as Date).getTime(), q.tz);
    else if (field === "model" || field === "provider") out[name] = value === "" ? null : value;
    else out[name] = value;
  });
  const latency = row.latency;
  const p50 = source === "rollups" ? percentile(latency ?? [], 0.5) : round(row.p50);
  const p95 = source === "rollups" ? percentile(latency ?? [], 0.95) : round(row.p95);
  return {
    ...out,
    requests: Number(row.requests),
    errors: Number(row.errors),
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
    cached_input_tokens: Number(row.cached_input_tokens),
    reasoning_tokens: Number(row.reasoning_tokens),
    cost_usd: row.cost_usd === null ? null : decimalOf(row.cost_usd),
    latency_ms_p50: p50,
    latency_ms_p95: p95,
  } as UsageRow;
}

function round(value: number | null | undefined): number | null {
  return value === null || value === undefined ? null : Math.round(value * 10) / 10;
}
