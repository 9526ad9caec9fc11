import type { HalfMedians } from "./drift";
import { createLatencyHistogram, type Histogram, type LatencySummary } from "./histogram";
import type { TimedClient } from "./http-client";
import { interleaveBlocks, type BlockOrder } from "./interleave";
import { accumulateCpu, readCpu, type CpuReading } from "./process-cpu";

/**
 * The in-flight measurement over any set of paths: requests one at a time (or a fixed number at
 * once), paths alternating block by block (interleave.ts), a latency histogram per path and per half
 * of the run, and the CPU each process spent while each path's blocks ran.
 */

export function byKey<K extends string, T>(keys: readonly K[], make: (key: K) => T): Record<K, T> {
  return Object.fromEntries(keys.map((key) => [key, make(key)])) as Record<K, T>;
}

/**
 * `count` requests, `inFlight` at a time: each of that many senders sends its next request once its
 * last answer is fully read (with 1, strictly sequential).
 */
export async function runBlock(client: TimedClient, count: number, inFlight: number, ...histograms: Histogram[]): Promise<void> {
  let started = 0;
  const sender = async () => {
    while (started < count) {
      started++;
      const micros = await client.timed();
      for (const h of histograms) h.recordValue(micros);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(inFlight, count)) }, sender));
}

/** Unrecorded requests, interleaved the same way as the measured ones. */
export async function warmUpInterleaved<P extends string>(
  clients: Record<P, TimedClient>,
  paths: readonly P[],
  perPath: number,
  blockSize: number,
  order: BlockOrder = interleaveBlocks,
  inFlight = 1,
): Promise<void> {
  for (const block of order(paths, perPath, blockSize)) await runBlock(clients[block.path], block.count, inFlight);
}

export interface InterleavedMeasurement<P extends string> {
  histograms: Record<P, Histogram>;
  /** The p50 of each half of the blocks, to tell a steady run from one still warming up. */
  halves: Record<P, HalfMedians>;
  /** CPU µs per process (bench = this one) while each path's blocks ran, summed over the run. */
  cpu: Record<P, CpuReading>;
  /**
   * CPU µs per process over the whole run, whichever path's block ran: work a mesh does after its
   * block has ended (a batch published or written after a pause) is in its own block's figure only
   * if it finishes in time, and here always.
   */
  wholeRunCpu: CpuReading;
  durationMs: number;
}

export interface InterleavedOptions {
  /** Measured requests per path. */
  requests: number;
  block: number;
  /** Processes whose CPU is read around every block, by name. */
  processes: Readonly<Record<string, number>>;
  /** The order of the blocks; interleaveBlocks unless given. */
  order?: BlockOrder;
  /** Requests in flight at once within a block (1 unless given). */
  inFlight?: number;
}

export async function measureInterleaved<P extends string>(
  clients: Record<P, TimedClient>,
  paths: readonly P[],
  options: InterleavedOptions,
): Promise<InterleavedMeasurement<P>> {
  const histograms = byKey(paths, () => createLatencyHistogram());
  const halves = byKey(paths, () => [createLatencyHistogram(), createLatencyHistogram()] as const);
  const cpu = byKey(paths, (): CpuReading => ({}));
  const started = process.hrtime.bigint();
  const first = readCpu(options.processes);
  const blocks = (options.order ?? interleaveBlocks)(paths, options.requests, options.block);
  for (const [index, block] of blocks.entries()) {
    const half = halves[block.path][index < blocks.length / 2 ? 0 : 1];
    const before = readCpu(options.processes);
    await runBlock(clients[block.path], block.count, options.inFlight ?? 1, histograms[block.path], half);
    accumulateCpu(cpu[block.path], before, readCpu(options.processes));
  }
  const whole: CpuReading = {};
  accumulateCpu(whole, first, readCpu(options.processes));
  return {
    histograms,
    halves: byKey(paths, (path) => ({
      firstHalfP50: halves[path][0].getValueAtPercentile(50) / 1000,
      secondHalfP50: halves[path][1].getValueAtPercentile(50) / 1000,
    })),
    cpu,
    wholeRunCpu: whole,
    durationMs: Number(process.hrtime.bigint() - started) / 1e6,
  };
}

export const round3 = (x: number) => Math.round(x * 1000) / 1000;

export function roundedSummary(s: LatencySummary): LatencySummary {
  return { count: s.count, p50: round3(s.p50), p90: round3(s.p90), p99: round3(s.p99), max: round3(s.max), mean: round3(s.mean) };
}

/** Whole µs per request from a run's CPU totals. */
export function cpuPerRequest(total: CpuReading, requests: number): Record<string, number> {
  return Object.fromEntries(Object.entries(total).map(([name, micros]) => [name, Math.round(micros / requests)]));
}
