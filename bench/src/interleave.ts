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
