import type { Db } from "@gw/db";
import { addDecimal, decimalOf } from "../decimal";
import { formatInZone, monthOf, monthRange, type Statement, type StatementLine } from "@gw/contracts";

export type { Statement, StatementLine };

export interface StatementQuery {
  workspaceId: string;
  /** `YYYY-MM`; default: the current month in the zone. */
  month?: string;
  tz: string;
  now: number;
}

/**
 * A workspace's billing statement for a month: one line per model or tool, item and unit price
 * (a price change within the month gives the item a second line), from the roll-ups. Once the month
 * has closed, the first statement served is stored and every later call answers that same text.
 * The JSON text is the statement; the CSV is derived from it.
 */
export async function statementFor(db: Db, q: StatementQuery): Promise<{ body: string; statement: Statement }> {
  const month = q.month ?? monthOf(q.now, q.tz);
  const { from, to } = monthRange(month, q.tz);
  const closed = q.now >= to;
  const key = [q.workspaceId, month, q.tz];
  if (closed) {
    const stored = await db.query<{ body: string }>("SELECT body FROM usage.statements WHERE workspace_id = $1 AND month = $2 AND tz = $3", key);
    if (stored.rows[0]) return parsed(stored.rows[0].body);
  }
  const statement = await compute(db, q.workspaceId, month, q.tz, from, to, closed, q.now);
  const body = JSON.stringify(statement);
  if (!closed) return { body, statement };
  // Two first reads at once store one statement: whichever lands first is the one both answer.
  await db.query("INSERT INTO usage.statements (workspace_id, month, tz, body) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING", [...key, body]);
  const stored = await db.query<{ body: string }>("SELECT body FROM usage.statements WHERE workspace_id = $1 AND month = $2 AND tz = $3", key);
  return parsed(stored.rows[0]?.body ?? body);
}

function parsed(body: string): { body: string; statement: Statement } {
  return { body, statement: JSON.parse(body) as Statement };
}

async function compute(db: Db, workspaceId: string, month: string, tz: string, from: number, to: number, closed: boolean, now: number): Promise<Statement> {
  const range = [workspaceId, new Date(from), new Date(to)];
  const { rows } = await db.query<{ kind: string; name: string; item: string; unit: string; unit_price_usd: string; units: string; amount_usd: string }>(
    `SELECT kind, name, item, unit, unit_price_usd::text, sum(units)::text AS units, sum(amount_usd)::text AS amount_usd
     FROM usage.hourly_lines WHERE workspace_id = $1 AND hour >= $2 AND hour < $3
     GROUP BY kind, name, item, unit, unit_price_usd
     ORDER BY kind, name, item, unit, unit_price_usd`,
    range,
  );
  const counts = await db.query<{ requests: string | null; unpriced: string | null }>(
    `SELECT sum(requests)::text AS requests, sum(unpriced)::text AS unpriced
     FROM usage.hourly WHERE workspace_id = $1 AND hour >= $2 AND hour < $3`,
    range,
  );
  const lines: StatementLine[] = rows.map((r) => ({
    model: r.kind === "model" ? r.name : null,
    tool: r.kind === "tool" ? r.name : null,
    item: r.item,
    unit: r.unit,
    units: decimalOf(r.units),
    unit_price_usd: decimalOf(r.unit_price_usd),
    amount_usd: decimalOf(r.amount_usd),
  }));
  return {
    object: "statement",
    workspace_id: workspaceId,
    month,
    tz,
    period_start: formatInZone(from, tz),
    period_end: formatInZone(to, tz),
    status: closed ? "closed" : "open",
    currency: "usd",
    lines,
    total_usd: lines.reduce((sum, line) => addDecimal(sum, line.amount_usd), "0"),
    requests: Number(counts.rows[0]?.requests ?? 0),
    unpriced_requests: Number(counts.rows[0]?.unpriced ?? 0),
    generated_at: new Date(now).toISOString(),
  };
}

const CSV_HEADER = ["model", "tool", "item", "unit", "units", "unit_price_usd", "amount_usd"];

function csvField(value: string | null): string {
  const text = value ?? "";
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The statement as CSV: a header, one row per line, then the total. */
export function statementCsv(statement: Statement): string {
  const rows = [CSV_HEADER, ...statement.lines.map((l) => [l.model, l.tool, l.item, l.unit, l.units, l.unit_price_usd, l.amount_usd])];
  rows.push(["total", null, null, null, null, null, statement.total_usd]);
  return `${rows.map((row) => row.map(csvField).join(",")).join("\r\n")}\r\n`;
}
