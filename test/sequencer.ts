import { readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The order test files start in: the longest first, so that none of them starts last and runs on
 * alone. Once a run has timed every file, vitest's own order (by those times) is kept. Without times
 * (a fresh clone, as on CI), the files timed in `durations.json` go first, longest first, then the
 * others by size. Size alone put short files of many bytes first and long ones of few bytes (a
 * data-folder test that starts the gateway a dozen times) near the end: a full run on two cores
 * then ended with one file running alone for minutes.
 */
export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const timed = files.every((f) => this.ctx.cache.getFileTestResults(`${f.project.name}:${relative(root, f.moduleId)}`));
    if (timed) return super.sort(files);
    const known = recordedSeconds(join(root, "test", "durations.json"));
    const weights = new Map(files.map((f) => [f, weightOf(f.moduleId, known.get(relative(root, f.moduleId)))]));
    return [...files].sort((a, b) => (weights.get(b) ?? 0) - (weights.get(a) ?? 0));
  }
}

/** Seconds each listed file took in a full run (`pnpm test:durations` writes them); none if the list is unreadable. */
export function recordedSeconds(path: string): Map<string, number> {
  try {
    const listed = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    return new Map(Object.entries(listed).filter((e): e is [string, number] => typeof e[1] === "number" && e[1] >= 0));
  } catch {
    return new Map();
  }
}

const SUITE_IMPORT = /from "\.\/([\w.-]+-suite)"/;
/** A recorded second outweighs any file's size, so every timed file starts before the untimed ones. */
const SECOND = 10_000_000;

export function weightOf(file: string, seconds?: number): number {
  if (seconds !== undefined) return SECOND * (1 + seconds);
  const size = statSync(file).size;
  if (size > 1_000) return size;
  const suite = SUITE_IMPORT.exec(readFileSync(file, "utf8"))?.[1];
  return suite ? statSync(join(dirname(file), `${suite}.ts`)).size / 2 : size;
}
