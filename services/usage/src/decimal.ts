/**
 * Exact decimal sums of money and unit counts, as strings (what Postgres numeric reads and writes):
 * a batch's costs are added up here before they meet the roll-ups, and floats would drift.
 */
const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** DECIMAL without its groups: a test on every amount a record is priced with, so the cheaper form. */
const DECIMAL_TEXT = /^-?\d+(?:\.\d+)?$/;

/** A plain decimal (`-12.5`, `0.000123`): what Postgres numeric and these functions take. */
export function isDecimal(text: string): boolean {
  return DECIMAL_TEXT.test(text);
}

interface Scaled {
  value: bigint;
  scale: number;
}

function parse(text: string): Scaled {
  const match = DECIMAL.exec(text);
  if (!match) throw new Error(`not a decimal: ${JSON.stringify(text)}`);
  const fraction = match[3] ?? "";
  const value = BigInt(`${match[2]}${fraction}`);
  return { value: match[1] ? -value : value, scale: fraction.length };
}

function format({ value, scale }: Scaled): string {
  const negative = value < 0n;
  let digits = (negative ? -value : value).toString().padStart(scale + 1, "0");
  if (scale > 0) {
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`.replace(/\.?0+$/, "");
  }
  return negative && digits !== "0" ? `-${digits}` : digits;
}

/** `a + b`, exactly; trailing zeros of the fraction dropped. */
export function addDecimal(a: string, b: string): string {
  const x = parse(a);
  const y = parse(b);
  const scale = Math.max(x.scale, y.scale);
  const value = x.value * 10n ** BigInt(scale - x.scale) + y.value * 10n ** BigInt(scale - y.scale);
  return format({ value, scale });
}

/**
 * A count as a decimal string: integers as they are, fractions (audio seconds) by their shortest
 * round-tripping form, never exponent notation.
 */
export function decimalOf(value: number | string): string {
  if (typeof value === "string") return format(parse(value));
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  if (Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) return String(value);
  const text = String(value);
  if (!/e/i.test(text)) return format(parse(text));
  // 1e-7 and the like: toFixed(20) is exact enough for any unit count a provider reports.
  return format(parse(value.toFixed(20)));
}
