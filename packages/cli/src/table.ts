/** A column of a text table: numbers are right-aligned so their digits line up. */
export interface Column {
  header: string;
  align?: "left" | "right";
}

/** Renders rows under their headers, columns two spaces apart, with no trailing blanks. */
export function renderTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    columns
      .map((c, i) => (c.align === "right" ? (cells[i] ?? "").padStart(widths[i]!) : (cells[i] ?? "").padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return `${[line(columns.map((c) => c.header)), ...rows.map(line)].join("\n")}\n`;
}

/** A cell for a value the API may leave out or null: a dash. */
export function cell(value: unknown): string {
  if (value === undefined || value === null || value === "") return "-";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/**
 * A non-negative amount as exact decimal text: the API writes money as decimal strings (Postgres
 * numeric, "0.000123450000") so that no sum drifts; a number is written out without exponent form.
 */
function decimalText(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) {
    return value.toLocaleString("en-US", { maximumFractionDigits: 20, useGrouping: false });
  }
  return typeof value === "string" && /^\d+(\.\d+)?$/.test(value) ? value : undefined;
}

/** US dollars exactly as the API gave them, trailing zeros trimmed to two decimals (0.35, 0.00012345, 2.00). */
export function usd(value: unknown): string {
  const text = decimalText(value);
  if (text === undefined) return cell(value);
  const [whole, fraction = ""] = text.split(".");
  return `${whole}.${fraction.replace(/0+$/, "").padEnd(2, "0")}`;
}

/** The exact sum of decimal amounts (numbers or decimal strings); undefined when none is one. */
export function sumDecimal(values: readonly unknown[]): string | undefined {
  const texts = values.map(decimalText).filter((t): t is string => t !== undefined);
  if (texts.length === 0) return undefined;
  const scale = Math.max(...texts.map((t) => t.split(".")[1]?.length ?? 0));
  const total = texts.reduce((sum, t) => {
    const [whole, fraction = ""] = t.split(".");
    return sum + BigInt(`${whole}${fraction.padEnd(scale, "0")}`);
  }, 0n);
  const digits = total.toString().padStart(scale + 1, "0");
  return scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
}
