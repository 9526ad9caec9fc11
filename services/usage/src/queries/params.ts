import { fromZodError, GatewayError } from "@gw/errors";
import { z } from "zod";
import { canonicalZone, HOUR_MS, instantOf } from "@gw/contracts";
import { storedText } from "../stored-text";

/**
 * The query parameters of the ledger's routes, checked with zod: a bad or unknown parameter is a
 * 400 in the OpenAI envelope naming it. Instants are ISO 8601; a date or a time without an offset
 * is read in the query's zone (`tz`, an IANA name, default UTC).
 */
export const groupFields = ["hour", "day", "month", "model", "key", "provider", "route", "status"] as const;
export type GroupField = (typeof groupFields)[number];

// Filters compared with stored text: U+0000 stands as ingest stored it (storedText).
const id = (max: number) => z.string().min(1).max(max).transform(storedText);
const text = z.string().max(100);
const month = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, "must be a month as YYYY-MM");
const status = z.string().regex(/^[1-5](\d\d|xx)$/, "must be an HTTP status (404) or a class (5xx)");

const UsageParams = z.strictObject({
  workspace_id: id(100).optional(),
  key_id: id(100).optional(),
  model: id(256).optional(),
  from: text.optional(),
  to: text.optional(),
  group_by: z.string().max(200).optional(),
  tz: text.optional(),
});

const LogsParams = z.strictObject({
  workspace_id: id(100).optional(),
  key_id: id(100).optional(),
  model: id(256).optional(),
  route: id(200).optional(),
  status: status.optional(),
  from: text.optional(),
  to: text.optional(),
  tz: text.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().min(1).max(600).optional(),
});

const StatementParams = z.strictObject({
  month: month.optional(),
  tz: text.optional(),
  format: z.enum(["json", "csv"]).default("json"),
});

export interface UsageParams {
  workspaceId?: string;
  keyId?: string;
  model?: string;
  from: number;
  to: number;
  groupBy: GroupField[];
  tz: string;
}

export interface LogsParams {
  workspaceId?: string;
  keyId?: string;
  model?: string;
  route?: string;
  status?: { min: number; max: number };
  from?: number;
  to?: number;
  limit: number;
  cursor?: { startedAt: number; requestId: string };
}

export interface StatementParams {
  month?: string;
  tz: string;
  format: "json" | "csv";
}

function parse<S extends z.ZodType>(schema: S, query: unknown): z.infer<S> {
  const parsed = schema.safeParse(query);
  if (!parsed.success) throw fromZodError(parsed.error, "query");
  return parsed.data;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError("invalid_request", `Invalid query: ${param}: ${message}`, { param });
}

export function zoneParam(tz: string | undefined): string {
  if (tz === undefined) return "UTC";
  const zone = canonicalZone(tz);
  if (!zone) throw invalid("tz", `${JSON.stringify(tz)} is not an IANA time zone (say UTC, Europe/Paris, Asia/Tokyo)`);
  return zone;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** An ISO 8601 date or date-time as an instant; without an offset, a wall time in `tz`. */
export function instantParam(param: string, value: string, tz: string): number {
  const fail = () => invalid(param, `${JSON.stringify(value)} is not an ISO 8601 date or date-time (2025-01-31, 2025-01-31T12:00:00Z)`);
  const m = DATE_TIME.exec(value) ?? DATE.exec(value);
  if (!m) throw fail();
  const [year, monthNo, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((v) => (v === undefined ? undefined : Number(v)));
  const ms = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0;
  const wall = { year: year!, month: monthNo!, day: day!, hour, minute, second, ms };
  // Date.UTC rolls 2025-02-30 over to March: a value whose fields do not survive is not a date.
  const check = new Date(Date.UTC(wall.year, wall.month - 1, wall.day, hour, minute, second));
  if (check.getUTCMonth() !== wall.month - 1 || check.getUTCDate() !== wall.day || check.getUTCHours() !== hour || check.getUTCMinutes() !== minute) {
    throw fail();
  }
  const offset = m[8]?.toUpperCase();
  if (offset === undefined) return instantOf(wall, tz);
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day, hour, minute, second, ms);
  if (offset === "Z") return asUtc;
  const minutes = Number(offset.slice(1, 3)) * 60 + Number(offset.slice(-2));
  return asUtc - (offset.startsWith("-") ? -minutes : minutes) * 60_000;
}

export function usageParams(query: unknown, now: number): UsageParams {
  const q = parse(UsageParams, query);
  const tz = zoneParam(q.tz);
  const groupBy: GroupField[] = [];
  for (const field of (q.group_by ?? "").split(",").map((f) => f.trim())) {
    if (field === "") continue;
    if (!(groupFields as readonly string[]).includes(field)) throw invalid("group_by", `${JSON.stringify(field)} is not one of ${groupFields.join(", ")}`);
    if (!groupBy.includes(field as GroupField)) groupBy.push(field as GroupField);
  }
  // Defaults: the 30 days up to the end of the current hour, whole hours so roll-ups answer.
  const to = q.to === undefined ? Math.ceil((now + 1) / HOUR_MS) * HOUR_MS : instantParam("to", q.to, tz);
  const from = q.from === undefined ? to - 30 * 24 * HOUR_MS : instantParam("from", q.from, tz);
  if (from >= to) throw invalid("from", "must be before to");
  return { workspaceId: q.workspace_id, keyId: q.key_id, model: q.model, from, to, groupBy, tz };
}

export function logsParams(query: unknown): LogsParams {
  const q = parse(LogsParams, query);
  const tz = zoneParam(q.tz);
  const from = q.from === undefined ? undefined : instantParam("from", q.from, tz);
  const to = q.to === undefined ? undefined : instantParam("to", q.to, tz);
  if (from !== undefined && to !== undefined && from >= to) throw invalid("from", "must be before to");
  let statusRange: LogsParams["status"];
  if (q.status !== undefined) {
    const first = Number(q.status[0]);
    statusRange = q.status.endsWith("xx") ? { min: first * 100, max: first * 100 + 99 } : { min: Number(q.status), max: Number(q.status) };
  }
  return {
    workspaceId: q.workspace_id,
    keyId: q.key_id,
    model: q.model,
    route: q.route,
    status: statusRange,
    from,
    to,
    limit: q.limit,
    cursor: q.cursor === undefined ? undefined : decodeCursor(q.cursor),
  };
}

export function statementParams(query: unknown): StatementParams {
  const q = parse(StatementParams, query);
  return { month: q.month, tz: zoneParam(q.tz), format: q.format };
}

/** The position after a page's last record: opaque to callers (base64url JSON). */
export function encodeCursor(startedAt: number, requestId: string): string {
  return Buffer.from(JSON.stringify([startedAt, requestId])).toString("base64url");
}

export function decodeCursor(cursor: string): { startedAt: number; requestId: string } {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === "string" && value[1].length > 0) {
    return { startedAt: value[0] as number, requestId: storedText(value[1]) };
  }
  throw invalid("cursor", "is not a cursor this API returned (pass next_cursor unchanged)");
}
