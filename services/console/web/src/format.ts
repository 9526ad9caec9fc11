/** Formatting in the workspace's time zone and of the ledger's numbers (decimal strings). */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = `${tz}|${JSON.stringify(options)}`;
  let f = formatters.get(key);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat(undefined, { ...options, timeZone: tz });
    } catch {
      f = new Intl.DateTimeFormat(undefined, { ...options, timeZone: "UTC" });
    }
    formatters.set(key, f);
  }
  return f;
}

/** An instant: ISO text, or epoch seconds or milliseconds (the admin API's `created_at` is in seconds). */
export function toDate(value: string | number | Date): Date {
  if (value instanceof Date) return value;
  if (typeof value === "number") return new Date(value < 1e12 ? value * 1000 : value);
  return new Date(value);
}

export function fmtDateTime(value: string | number | Date | null | undefined, tz: string): string {
  if (value === null || value === undefined) return "—";
  const d = toDate(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return formatter(tz, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" }).format(d);
}

/** A time for a long list: without the year when it is this year's. */
export function fmtShortDateTime(value: string | number | Date | null | undefined, tz: string): string {
  if (value === null || value === undefined) return "—";
  const d = toDate(value);
  if (Number.isNaN(d.getTime())) return String(value);
  const year = (at: Date) => formatter(tz, { year: "numeric" }).format(at);
  const sameYear = year(d) === year(new Date());
  return formatter(tz, {
    ...(sameYear ? {} : { year: "numeric" }),
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  }).format(d);
}

export function fmtDate(value: string | number | Date | null | undefined, tz: string): string {
  if (value === null || value === undefined) return "—";
  const d = toDate(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return formatter(tz, { year: "numeric", month: "short", day: "numeric" }).format(d);
}

/** An hour bucket's label, short (for charts). */
export function fmtHour(value: string | number, tz: string): string {
  return formatter(tz, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }).format(toDate(value));
}

/** A `YYYY-MM-DD` day (already in the workspace's zone) as a short label. */
export function fmtDay(day: string): string {
  const [y, m, d] = day.split("-").map(Number);
  if (!y || !m || !d) return day;
  return formatter("UTC", { month: "short", day: "numeric" }).format(new Date(Date.UTC(y, m - 1, d)));
}

export function fmtMonth(month: string): string {
  const [y, m] = month.split("-").map(Number);
  if (!y || !m) return month;
  return formatter("UTC", { year: "numeric", month: "long" }).format(new Date(Date.UTC(y, m - 1, 1)));
}

/** The short name of the zone's offset now ("GMT+1"), to say which zone times are in. */
export function zoneLabel(tz: string): string {
  const part = formatter(tz, { timeZoneName: "short" })
    .formatToParts(new Date())
    .find((p) => p.type === "timeZoneName")?.value;
  return part && part !== tz ? `${tz} (${part})` : tz;
}

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

export function fmtInt(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : integer.format(value);
}

export function fmtCompact(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : compact.format(value);
}

/** US dollars from a decimal string or number: cents for whole amounts, more digits for small ones. */
export function fmtUsd(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === "") return "—";
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n)) return String(value);
  const abs = Math.abs(n);
  const digits = abs === 0 || abs >= 1 ? 2 : abs >= 0.01 ? 4 : 6;
  return new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: digits }).format(n);
}

/** A price per unit (per million tokens, per image): as given, never rounded to cents. */
export function fmtPrice(value: number | string | null | undefined): string {
  if (value === null || value === undefined) return "—";
  const n = Number(value);
  if (!Number.isFinite(n)) return String(value);
  return new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 }).format(n);
}

export function fmtMs(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  if (value >= 10_000) return `${(value / 1000).toFixed(1)} s`;
  if (value >= 1000) return `${(value / 1000).toFixed(2)} s`;
  return `${Math.round(value)} ms`;
}

export function fmtPercent(part: number, whole: number): string {
  if (whole <= 0) return "—";
  const p = (part / whole) * 100;
  return `${p === 0 ? "0" : p < 0.1 ? "<0.1" : p.toFixed(p < 10 ? 1 : 0)}%`;
}

export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
