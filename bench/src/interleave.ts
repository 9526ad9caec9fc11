export interface Block<P extends string> {
  path: P;
  count: number;
}

/**
 * Splits `perPath` requests per path into blocks of at most `blockSize` and interleaves the paths
 * round by round. Odd rounds run the paths in reverse order (A B | B A | A B …): slow drift over
 * the run (heap growth, CPU frequency, a neighbour's load) then lands on both paths alike instead
 * of always favouring whichever path goes first.
 */
export function interleaveBlocks<P extends string>(paths: readonly P[], perPath: number, blockSize: number): Block<P>[] {
  if (paths.length === 0) throw new Error("interleaveBlocks: no paths");
  if (!Number.isInteger(blockSize) || blockSize < 1) throw new Error(`interleaveBlocks: block size ${blockSize}`);
  if (!Number.isInteger(perPath) || perPath < 0) throw new Error(`interleaveBlocks: request count ${perPath}`);
  const blocks: Block<P>[] = [];
  for (let round = 0, done = 0; done < perPath; round++, done += blockSize) {
    const count = Math.min(blockSize, perPath - done);
    const order = round % 2 === 0 ? paths : [...paths].reverse();
    for (const path of order) blocks.push({ path, count });
  }
  return blocks;
}

/** How a run's requests are split into blocks and ordered (interleaveBlocks or rotateBlocks). */
export type BlockOrder = <P extends string>(paths: readonly P[], perPath: number, blockSize: number) => Block<P>[];

/**
 * Like interleaveBlocks, but round r starts with path r (A B C | B C A | C A B …). With three
 * paths, A B C | C B A would run A and C twice in a row at every turn while B always follows
 * another path, so B's blocks would start colder; here no path ever follows itself and every path
 * takes every place in turn. With two paths the order is the same as interleaveBlocks'.
 */
export function rotateBlocks<P extends string>(paths: readonly P[], perPath: number, blockSize: number): Block<P>[] {
  const rounds = interleaveBlocks(paths, perPath, blockSize);
  return rounds.map((block, index) => {
    const round = Math.floor(index / paths.length);
    return { path: paths[(round + (index % paths.length)) % paths.length] as P, count: block.count };
  });
}
