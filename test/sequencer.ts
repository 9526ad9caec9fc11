import { readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The order test files start in: the longest first, so that none of them starts last and runs on
 * alone. Once a run has timed every file, vitest's own order (by those times) is kept. Without times
 * (a fresh clone, as on CI), vitest orders by file size; here a file that only runs a shared suite
 * for one mode (`consoleBrowserSuite("the mesh")`) weighs half of that suite, not its own few lines,
 * which would put two of the suite's longest files at the very end.
 */
export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const timed = files.every((f) => this.ctx.cache.getFileTestResults(`${f.project.name}:${relative(root, f.moduleId)}`));
    if (timed) return super.sort(files);
    const weights = new Map(files.map((f) => [f, weightOf(f.moduleId)]));
    return [...files].sort((a, b) => (weights.get(b) ?? 0) - (weights.get(a) ?? 0));
  }
}

const SUITE_IMPORT = /from "\.\/([\w.-]+-suite)"/;

export function weightOf(file: string): number {
  const size = statSync(file).size;
  if (size > 1_000) return size;
  const suite = SUITE_IMPORT.exec(readFileSync(file, "utf8"))?.[1];
  return suite ? statSync(join(dirname(file), `${suite}.ts`)).size / 2 : size;
}
