import type { LedgerRecord } from "@gw/contracts";
import type { Db } from "@gw/db";
import { decimalOf } from "../decimal";
import { encodeCursor, type LogsParams } from "./params";

/** One request as /logs answers it (the shape is the contracts' LedgerRecord). */
export type LogRecord = LedgerRecord;

interface RecordRow
  extends Omit<LogRecord, "started_at" | "units" | "input_tokens" | "output_tokens" | "cached_input_tokens" | "cache_write_tokens" | "reasoning_tokens"> {
  started_at: Date;
  units: Record<string, number> | null;
  input_tokens: string | null;
  output_tokens: string | null;
  cached_input_tokens: string | null;
  cache_write_tokens: string | null;
  reasoning_tokens: string | null;
}

const COLUMNS = `request_id, started_at, workspace_id, key_id, route, model, provider, upstream_model, attempts, status, error_type,
  stream, job_id, duration_ms, ttft_ms, upstream_ms, input_tokens, output_tokens, cached_input_tokens, cache_write_tokens,
  reasoning_tokens, units, cost_usd, price_version`;

const count = (value: string | null): number | null => (value === null ? null : Number(value));

function toLogRecord(row: RecordRow): LogRecord {
  return {
    ...row,
    started_at: row.started_at.toISOString(),
    input_tokens: count(row.input_tokens),
    output_tokens: count(row.output_tokens),
    cached_input_tokens: count(row.cached_input_tokens),
    cache_write_tokens: count(row.cache_write_tokens),
    reasoning_tokens: count(row.reasoning_tokens),
    units: row.units ?? {},
    cost_usd: row.cost_usd === null ? null : decimalOf(row.cost_usd),
  };
}

/**
 * A page of records, newest first, after the cursor's position: keyset pagination on
 * (started_at, request_id), so records arriving while a caller pages neither shift nor repeat what
 * it has yet to see.
 */
export async function queryLogs(db: Db, q: LogsParams): Promise<{ data: LogRecord[]; next_cursor: string | null }> {
  const params: unknown[] = [];
  const where: string[] = [];
  const add = (sql: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (q.workspaceId !== undefined) add((p) => `workspace_id = ${p}`, q.workspaceId);
  if (q.keyId !== undefined) add((p) => `key_id = ${p}`, q.keyId);
  if (q.model !== undefined) add((p) => `model = ${p}`, q.model);
  if (q.route !== undefined) add((p) => `route = ${p}`, q.route);
  if (q.status !== undefined) {
    add((p) => `status >= ${p}`, q.status.min);
    add((p) => `status <= ${p}`, q.status.max);
  }
  if (q.from !== undefined) add((p) => `started_at >= ${p}`, new Date(q.from));
  if (q.to !== undefined) add((p) => `started_at < ${p}`, new Date(q.to));
  if (q.cursor) {
    const at = new Date(q.cursor.startedAt);
    // The plain bound lets the planner skip newer partitions; the row comparison is the position.
    add((p) => `started_at <= ${p}`, at);
    params.push(q.cursor.requestId);
    where.push(`(started_at, request_id) < ($${params.length - 1}, $${params.length})`);
  }
  params.push(q.limit + 1);
  const sql = `SELECT ${COLUMNS} FROM usage.records ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
    ORDER BY started_at DESC, request_id DESC LIMIT $${params.length}`;
  const { rows } = await db.query<RecordRow>(sql, params);
  const page = rows.slice(0, q.limit).map(toLogRecord);
  const last = rows.length > q.limit ? rows[q.limit - 1] : undefined;
  return { data: page, next_cursor: last ? encodeCursor(last.started_at.getTime(), last.request_id) : null };
}

/** One record by request id, within a workspace unless the caller may read them all. */
export async function queryRecord(db: Db, requestId: string, workspaceId: string | undefined): Promise<LogRecord | undefined> {
  const params: unknown[] = [requestId];
  if (workspaceId !== undefined) params.push(workspaceId);
  const { rows } = await db.query<RecordRow>(
    `SELECT ${COLUMNS} FROM usage.records WHERE request_id = $1 ${workspaceId !== undefined ? "AND workspace_id = $2" : ""}
     ORDER BY started_at DESC LIMIT 1`,
    params,
  );
  return rows[0] ? toLogRecord(rows[0]) : undefined;
}
