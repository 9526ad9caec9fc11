/**
 * Time-zone arithmetic with Intl (no dependency): offsets, local wall times to instants, and the
 * ISO text of an instant in a zone. The ledger's queries group by zone in SQL and these decide the
 * bounds; budgets count their months with them.
 */
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const formatters = new Map<string, Intl.DateTimeFormat>();

function offsetFormatter(tz: string): Intl.DateTimeFormat {
  let formatter = formatters.get(tz);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", { timeZone: tz, timeZoneName: "longOffset" });
    if (formatters.size > 1_000) formatters.clear();
    formatters.set(tz, formatter);
  }
  return formatter;
}

/** The zone's canonical IANA name (`europe/berlin` → `Europe/Berlin`), or undefined when Intl does not know it. */
export function canonicalZone(tz: string): string | undefined {
  if (tz.length === 0 || tz.length > 64) return undefined;
  // Newer ICU versions also take UTC offsets ("+01:00"); only a zone name is taken, on every Node.
  if (!/^[A-Za-z]/.test(tz)) return undefined;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** Minutes the zone is ahead of UTC at an instant (Asia/Tokyo: 540). */
export function offsetMinutes(tz: string, at: number): number {
  const part = offsetFormatter(tz)
    .formatToParts(new Date(at))
    .find((p) => p.type === "timeZoneName")?.value;
  const match = part ? /^GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(part) : null;
  if (!match) throw new Error(`unexpected offset text for ${tz}: ${part}`);
  if (!match[1]) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3]) + Number(match[4] ?? 0) / 60;
  return match[1] === "-" ? -minutes : minutes;
}

export interface WallTime {
  year: number;
  /** 1–12; 13 is January of the next year (month arithmetic stays simple). */
  month: number;
  day?: number;
  hour?: number;
  minute?: number;
  second?: number;
  ms?: number;
}

/** The instant a wall-clock time in the zone names (in a gap, the time just after it). */
export function instantOf(wall: WallTime, tz: string): number {
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day ?? 1, wall.hour ?? 0, wall.minute ?? 0, wall.second ?? 0, wall.ms ?? 0);
  let guess = asUtc - offsetMinutes(tz, asUtc) * 60_000;
  const corrected = asUtc - offsetMinutes(tz, guess) * 60_000;
  if (corrected !== guess) guess = Math.max(guess, corrected);
  return guess;
}

/** `2025-01-02T00:00:00+09:00` (or `…Z` in UTC): the instant as wall time in the zone. */
export function formatInZone(at: number, tz: string): string {
  const offset = offsetMinutes(tz, at);
  const wall = new Date(at + offset * 60_000).toISOString().slice(0, 19);
  if (offset === 0) return `${wall}Z`;
  const abs = Math.abs(offset);
  const sign = offset < 0 ? "-" : "+";
  return `${wall}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(Math.round(abs % 60)).padStart(2, "0")}`;
}

/** The zone's calendar month (`2025-01`) of an instant. */
export function monthOf(at: number, tz: string): string {
  return new Date(at + offsetMinutes(tz, at) * 60_000).toISOString().slice(0, 7);
}

/** [start, end) of a calendar month (`YYYY-MM`) in the zone. */
export function monthRange(month: string, tz: string): { from: number; to: number } {
  const [year, mm] = month.split("-").map(Number) as [number, number];
  return { from: instantOf({ year, month: mm }, tz), to: instantOf({ year, month: mm + 1 }, tz) };
}

/**
 * Whether every local hour of [from, to) in the zone starts on a UTC hour, so hourly roll-ups can
 * answer for it: true for UTC, Asia/Tokyo, Europe/Paris (DST moves by whole hours); false for
 * Asia/Kolkata. Offsets change at most a few times a year and last months, so samples a day apart see them.
 */
export function wholeHourOffsets(tz: string, from: number, to: number): boolean {
  const whole = (at: number) => offsetMinutes(tz, at) % 60 === 0;
  if (!whole(from) || !whole(to)) return false;
  // At most about a thousand samples, so a query over decades costs no more than one over years.
  const step = Math.max(DAY_MS, Math.ceil((to - from) / 1_000));
  for (let at = from; at < to; at += step) if (!whole(at)) return false;
  return true;
}

export const isWholeHour = (at: number): boolean => at % HOUR_MS === 0;
export const startOfHour = (at: number): number => Math.floor(at / HOUR_MS) * HOUR_MS;
export { DAY_MS, HOUR_MS };
