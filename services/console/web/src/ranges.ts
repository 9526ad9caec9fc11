/**
 * The periods the overview and usage pages offer, as the usage API's `from`/`to` (dates are read in
 * the query's `tz`, the workspace's zone), with the buckets a chart needs so empty hours and days
 * show as zero rather than missing.
 */
export type RangeName = "24h" | "7d" | "30d" | "month";

export const rangeLabels: Record<RangeName, string> = {
  "24h": "Last 24 hours",
  "7d": "Last 7 days",
  "30d": "Last 30 days",
  month: "This month",
};

export const rangeNames = Object.keys(rangeLabels) as RangeName[];

export function isRange(value: string | null): value is RangeName {
  return value !== null && value in rangeLabels;
}

const HOUR = 3_600_000;

/** Today's date in the zone, as YYYY-MM-DD. */
export function todayIn(tz: string, now = Date.now()): string {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).formatToParts(now);
  } catch {
    parts = new Intl.DateTimeFormat("en-CA", { timeZone: "UTC", year: "numeric", month: "2-digit", day: "2-digit" }).formatToParts(now);
  }
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? "01";
  return `${get("year")}-${get("month")}-${get("day")}`;
}

export function monthIn(tz: string, now = Date.now()): string {
  return todayIn(tz, now).slice(0, 7);
}

export function addDays(day: string, n: number): string {
  const [y, m, d] = day.split("-").map(Number);
  return new Date(Date.UTC(y ?? 1970, (m ?? 1) - 1, (d ?? 1) + n)).toISOString().slice(0, 10);
}

export function addMonths(month: string, n: number): string {
  const [y, m] = month.split("-").map(Number);
  return new Date(Date.UTC(y ?? 1970, (m ?? 1) - 1 + n, 1)).toISOString().slice(0, 7);
}

export interface RangeQuery {
  from: string;
  to: string;
  group: "hour" | "day";
  /** Bucket keys in order: hour instants (ms) as text, or YYYY-MM-DD days. */
  buckets: string[];
}

export function rangeQuery(range: RangeName, tz: string, now = Date.now()): RangeQuery {
  if (range === "24h") {
    // Whole hours, so the ledger's roll-ups answer.
    const to = Math.ceil((now + 1) / HOUR) * HOUR;
    const from = to - 24 * HOUR;
    const buckets = Array.from({ length: 24 }, (_, i) => String(from + i * HOUR));
    return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), group: "hour", buckets };
  }
  const today = todayIn(tz, now);
  const first = range === "7d" ? addDays(today, -6) : range === "30d" ? addDays(today, -29) : `${today.slice(0, 7)}-01`;
  const buckets: string[] = [];
  for (let day = first; day <= today; day = addDays(day, 1)) buckets.push(day);
  return { from: first, to: addDays(today, 1), group: "day", buckets };
}

/** The key of a usage row's time bucket, matching RangeQuery.buckets. */
export function bucketOf(row: { hour?: string; day?: string }): string | undefined {
  if (row.hour !== undefined) return String(Date.parse(row.hour));
  return row.day;
}
