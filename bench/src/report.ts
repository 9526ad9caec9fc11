import type { MachineInfo } from "./machine";
/** A printable table: every scenario returns its headline numbers in this shape. */
export interface Table {
  title: string;
  columns: string[];
  rows: (string | number)[][];
}

/** Milliseconds with 3 decimals (microsecond resolution); differences keep their sign. */
export function formatMs(ms: number, signed = false): string {
  const text = ms.toFixed(3);
  return signed && ms >= 0 ? `+${text}` : text;
}

/** First column left-aligned (labels), the rest right-aligned (numbers). */
export function renderTable(table: Table): string {
  const cells = [table.columns, ...table.rows.map((r) => r.map(String))];
  const widths = table.columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [table.title, ...cells.map(line)].join("\n");
}

export type RunHeader = MachineInfo;

/** Who ran it where: numbers from different machines or commits are not comparable. */
export function renderHeader(m: RunHeader): string {
  return [
    `machine  ${m.cpuModel}, ${m.cores} cores, ${m.memoryMB} MB, ${m.platform}`,
    `node     ${m.node}`,
    `commit   ${m.commit}${m.dirty ? " (with uncommitted changes)" : ""}`,
    `load     ${m.loadAverage.join(" ")} (1/5/15 min, at start)`,
    ...(m.cpuIdle ? [`idle     ${m.cpuIdle}`] : []),
  ].join("\n");
}
