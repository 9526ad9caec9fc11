import { cell, type Column, renderTable, sumDecimal, usd } from "./table";

/** What the ledger's answers print as without --json: tables for lists, aligned fields for a record. */
type Row = Record<string, unknown>;

const rowsOf = (body: Row): Row[] => (Array.isArray(body.data) ? (body.data as Row[]) : []);

/**
 * Counts with thousands separators (tokens run to millions); fractions, like audio seconds, to three
 * places. A count may come as a decimal string (a numeric column), and reads the same.
 */
function count(value: unknown): string {
  const n = typeof value === "string" && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: 3 }) : cell(value);
}

/** A time the API gives as epoch milliseconds, in ISO form; a string is already one. */
function time(value: unknown): string {
  return typeof value === "number" && Number.isFinite(value) ? new Date(value).toISOString() : cell(value);
}

/** The usage answer's measures, by field, with their column headers; every other field of a row is a group. */
const usageMeasures = [
  ["requests", "requests"],
  ["errors", "errors"],
  ["input_tokens", "input"],
  ["output_tokens", "output"],
  ["cached_input_tokens", "cached"],
  ["reasoning_tokens", "reasoning"],
  ["cost_usd", "cost_usd"],
  ["latency_ms_p50", "p50_ms"],
  ["latency_ms_p95", "p95_ms"],
] as const;
const summed = new Set(["requests", "errors", "input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens", "cost_usd"]);

export function formatUsage(body: Row): string {
  const rows = rowsOf(body);
  if (rows.length === 0) return "no usage matches\n";
  const measures = new Set<string>(usageMeasures.map(([field]) => field));
  const groups = [...new Set(rows.flatMap((r) => Object.keys(r)))].filter((k) => !measures.has(k) && k !== "object");
  const columns: Column[] = [...groups.map((header) => ({ header })), ...usageMeasures.map(([, header]) => ({ header, align: "right" as const }))];
  const measure = (field: string, value: unknown) => (field === "cost_usd" ? usd(value) : field.startsWith("latency") ? latency(value) : count(value));
  const lines = rows.map((r) => [...groups.map((g) => cell(r[g])), ...usageMeasures.map(([field]) => measure(field, r[field]))]);
  // Percentiles do not add up, so the total row leaves them out.
  if (groups.length > 0 && rows.length > 1) {
    const total = (field: string) => (summed.has(field) ? sumDecimal(rows.map((r) => r[field])) : undefined);
    lines.push([...groups.map((_, i) => (i === 0 ? "total" : "")), ...usageMeasures.map(([field]) => measure(field, total(field)))]);
  }
  return renderTable(columns, lines);
}

function latency(value: unknown): string {
  return typeof value === "number" && Number.isFinite(value) ? count(Math.round(value)) : cell(value);
}

const logColumns: Column[] = [
  { header: "time" },
  { header: "request_id" },
  { header: "workspace" },
  { header: "key" },
  { header: "route" },
  { header: "model" },
  { header: "status", align: "right" },
  { header: "ms", align: "right" },
  { header: "input", align: "right" },
  { header: "output", align: "right" },
  { header: "cost_usd", align: "right" },
];

/** A record's tokens, flat (`input_tokens`) or as the service reported them (`outcome.usage`). */
function tokens(record: Row, field: "input_tokens" | "output_tokens"): unknown {
  const usage = (record.outcome as { usage?: Row } | undefined)?.usage;
  return record[field] ?? usage?.[field];
}

export function formatLogs(body: Row): string {
  const rows = rowsOf(body);
  const cursor = typeof body.next_cursor === "string" && body.next_cursor ? `more: add --cursor ${body.next_cursor}\n` : "";
  if (rows.length === 0) return `no requests match\n${cursor}`;
  const lines = rows.map((r) => [
    time(r.started_at),
    cell(r.request_id),
    cell(r.workspace_id),
    cell(r.key_id),
    cell(r.route),
    cell(r.model),
    cell(r.status),
    latency(r.duration_ms),
    count(tokens(r, "input_tokens")),
    count(tokens(r, "output_tokens")),
    usd(r.cost_usd),
  ]);
  return `${renderTable(logColumns, lines)}${cursor}`;
}

/** One record, a field per line (nested objects as dotted paths), names aligned. */
export function formatLog(body: Row): string {
  const fields: [string, string][] = [];
  const walk = (prefix: string, value: unknown) => {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) walk(prefix ? `${prefix}.${k}` : k, v);
    } else {
      fields.push([prefix, prefix === "started_at" ? time(value) : cell(value)]);
    }
  };
  walk("", body);
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${k.padEnd(width)}  ${v}\n`).join("");
}

const statementColumns: Column[] = [
  { header: "model/tool" },
  { header: "item" },
  { header: "units", align: "right" },
  { header: "unit" },
  { header: "unit_price_usd", align: "right" },
  { header: "amount_usd", align: "right" },
];

export function formatStatement(body: Row): string {
  const lines = (Array.isArray(body.lines) ? (body.lines as Row[]) : []).map((l) => [
    cell(l.model ?? l.tool),
    cell(l.item),
    count(l.units),
    cell(l.unit),
    usd(l.unit_price_usd),
    usd(l.amount_usd),
  ]);
  const head = `workspace ${cell(body.workspace_id)}  month ${cell(body.month)}  currency ${cell(body.currency)}\n`;
  const table = lines.length ? renderTable(statementColumns, lines) : "no billable usage this month\n";
  return `${head}${table}total_usd ${usd(body.total_usd)}\n`;
}
