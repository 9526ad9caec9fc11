/**
 * Writes test/durations.json, the seconds each test file of 3 s or more took, from a vitest JSON
 * report (by default `.ci/results.json`, which a run with CI set writes):
 *
 *   CI=true pnpm test; pnpm test:durations [report.json]
 *
 * The sequencer starts those files first, longest first, on a clone with no timings of its own.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * A report's file as a path in this checkout: the report may come from another one (.ci/run's fresh
 * clone), so leading folders are dropped until what is left names a file here; undefined if none does.
 */
function inThisCheckout(file: string): string | undefined {
  const parts = file.split(/[\\/]/);
  for (let i = 0; i < parts.length; i++) {
    const rest = parts.slice(i).join("/");
    if (rest !== "" && existsSync(join(root, rest))) return rest;
  }
  return undefined;
}

export function durationsOf(report: { testResults: { name: string; startTime: number; endTime: number }[] }, minSeconds = 3): Record<string, number> {
  const out: Record<string, number> = {};
  const files = report.testResults.map((t) => [inThisCheckout(t.name), (t.endTime - t.startTime) / 1000] as const).sort((a, b) => b[1] - a[1]);
  for (const [file, seconds] of files) if (file !== undefined && seconds >= minSeconds) out[file] = Math.round(seconds);
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const reportPath = process.argv[2] ?? join(root, ".ci", "results.json");
  const durations = durationsOf(JSON.parse(readFileSync(reportPath, "utf8")));
  writeFileSync(join(root, "test", "durations.json"), `${JSON.stringify(durations, null, 2)}\n`);
  process.stdout.write(`test/durations.json: ${Object.keys(durations).length} files from ${reportPath}\n`);
}
