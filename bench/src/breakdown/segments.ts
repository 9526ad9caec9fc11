/**
 * Where one request's time goes, hop by hop, from the rows the breakdown hook writes in each
 * service and the end-to-end time the client measured. Each service's row is
 * [start → call to the next hop, wait for its answer, answer → end of own response] in µs; rows
 * are paired by position, which holds because requests go one at a time.
 */
export type HookRow = [before: number, wait: number, after: number];

export interface SegmentSummary {
  segment: string;
  /** Milliseconds. */
  p50: number;
  p99: number;
  /** Mean over the requests whose end-to-end time was among the slowest 3 %. */
  slowestMean: number;
}

export interface Breakdown {
  requests: number;
  segments: SegmentSummary[];
}

const sum = (row: HookRow) => row[0] + row[1] + row[2];

/** The segments, in the order a request meets them; the last row is the client's end-to-end time. */
export function breakdownOf(endToEnd: readonly number[], ingress: readonly HookRow[], inference: readonly HookRow[], slowestShare = 0.03): Breakdown {
  const n = endToEnd.length;
  if (n === 0 || ingress.length !== n || inference.length !== n) {
    throw new Error(`breakdown: ${n} requests timed, but ingress recorded ${ingress.length} and inference ${inference.length}`);
  }
  const columns: Array<[string, (i: number) => number]> = [
    ["client → ingress, and back (outside ingress's handler)", (i) => endToEnd[i]! - sum(ingress[i]!)],
    ["ingress: key, body, Redis limiter, proxy set-up", (i) => ingress[i]![0]],
    ["ingress → inference, and back (outside inference's handler)", (i) => ingress[i]![1] - sum(inference[i]!)],
    ["inference: identity, body, validation, route", (i) => inference[i]![0]],
    ["inference waits for the upstream", (i) => inference[i]![1]],
    ["inference: reads and sends the answer", (i) => inference[i]![2]],
    ["ingress: relays the answer", (i) => ingress[i]![2]],
    ["end to end (client)", (i) => endToEnd[i]!],
  ];
  const bySlowest = [...endToEnd.keys()].sort((a, b) => endToEnd[b]! - endToEnd[a]!);
  const slowest = bySlowest.slice(0, Math.max(1, Math.round(n * slowestShare)));
  const ms = (micros: number) => Math.round(micros) / 1000;
  return {
    requests: n,
    segments: columns.map(([segment, value]) => {
      const values = endToEnd.map((_, i) => value(i));
      const sorted = [...values].sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(n - 1, Math.ceil(q * n) - 1)]!;
      const slowestMean = slowest.reduce((total, i) => total + values[i]!, 0) / slowest.length;
      return { segment, p50: ms(at(0.5)), p99: ms(at(0.99)), slowestMean: ms(slowestMean) };
    }),
  };
}
