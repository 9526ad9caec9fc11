/**
 * Exact decimal arithmetic for money. Amounts are BigInt counts of picodollars (1e-12 USD), read
 * from and written to decimal strings, so no sum ever passes through a float.
 */

/** Decimal places of every USD string the pricer writes ("0.000123450000"). */
export const USD_DECIMALS = 12;

/** A non-negative decimal, exactly: `digits` × 10^-`scale` (scale ≥ 0). */
export interface Decimal {
  digits: bigint;
  scale: number;
}

const decimalPattern = /^(\d+)(?:\.(\d*))?(?:e([+-]?\d+))?$/i;

/**
 * Reads a non-negative decimal exactly: "0.15", "12", "1.5e-7", or a number (through String(), its
 * shortest round-trip form, which is the decimal a price or count was written as). Throws a
 * RangeError on anything else (negative, NaN, Infinity, garbage).
 */
export function parseDecimal(value: string | number): Decimal {
  const text = typeof value === "number" ? String(value) : value.trim();
  const match = decimalPattern.exec(text);
  if (!match || (typeof value === "number" && !Number.isFinite(value))) throw new RangeError(`not a non-negative decimal: ${text}`);
  const fraction = match[2] ?? "";
  const exponent = Number(match[3] ?? 0);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 1000) throw new RangeError(`exponent out of range: ${text}`);
  let digits = BigInt(`${match[1]}${fraction}`);
  let scale = fraction.length - exponent;
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits, scale };
}

/** `numerator / denominator`, rounded half up (both non-negative, denominator positive). */
export function divRoundHalfUp(numerator: bigint, denominator: bigint): bigint {
  return (2n * numerator + denominator) / (2n * denominator);
}

/** A decimal at `scale` decimal places, rounded half up when it has more. */
export function rescale(value: Decimal, scale: number): bigint {
  if (value.scale <= scale) return value.digits * 10n ** BigInt(scale - value.scale);
  return divRoundHalfUp(value.digits, 10n ** BigInt(value.scale - scale));
}

/** A USD amount as picodollars, rounded half up past the 12th decimal place. */
export function toPicoUsd(usd: string | number): bigint {
  return rescale(parseDecimal(usd), USD_DECIMALS);
}

/** Writes `digits` × 10^-`scale` as a plain decimal string with exactly `scale` decimal places. */
function formatDecimal(digits: bigint, scale: number): string {
  const negative = digits < 0n;
  const text = (negative ? -digits : digits).toString().padStart(scale + 1, "0");
  const body = scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`;
  return negative ? `-${body}` : body;
}

/** Picodollars as a USD string with 12 decimal places: 123450000n → "0.000123450000". */
export function formatUsd(picoUsd: bigint): string {
  return formatDecimal(picoUsd, USD_DECIMALS);
}

const zeros = ["", "0", "00", "000", "0000", "00000"];

/** 0 ≤ n < 1e6 in six digits. */
function sixDigits(n: number): string {
  const text = String(n);
  return text.length < 6 ? `${zeros[6 - text.length]}${text}` : text;
}

/** Whole picodollars below 2^53 as a USD string, as formatUsd writes them, without BigInt. */
export function formatPicoUsd(picoUsd: number): string {
  if (!Number.isSafeInteger(picoUsd)) throw new RangeError(`not a whole number of picodollars below 2^53: ${picoUsd}`);
  if (picoUsd < 0) return `-${formatPicoUsd(-picoUsd)}`;
  // All exact: the remainder of an integer, a multiple of 1e12 divided by it. The fraction is
  // written as two halves below 1e6, small integers V8 turns into text far faster than one of 1e12.
  const fraction = picoUsd % 1e12;
  const high = Math.floor(fraction / 1e6);
  return `${(picoUsd - fraction) / 1e12}.${sixDigits(high)}${sixDigits(fraction - high * 1e6)}`;
}

/**
 * The exact sum of two non-negative USD decimal strings (any number of decimals, e.g. Postgres
 * numeric text), written with 12 decimal places or more when an operand has more.
 */
export function addUsd(a: string, b: string): string {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  const scale = Math.max(USD_DECIMALS, x.scale, y.scale);
  return formatDecimal(rescale(x, scale) + rescale(y, scale), scale);
}
