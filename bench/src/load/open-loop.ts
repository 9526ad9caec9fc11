import { Pool } from "undici";
import { createLatencyHistogram, microsSince, summarize, type Histogram, type LatencySummary } from "../histogram";
import type { RequestTarget } from "../http-client";
import { withDefaults } from "./with-defaults";

export interface OpenLoopOptions {
  /** Requests per second, evenly spaced: request i is due at start + i / rate. */
  rate: number;
  /** The measured window, in seconds. */
  durationSeconds: number;
  /** Unrecorded load at the same rate straight before the measured window (no gap between), s. */
  warmupSeconds?: number;
  /** The most connections the pool opens; pipelining is 1, so also the most requests on the wire. */
  connections?: number;
  /** A request that leaves more than this after its scheduled time counts as a late send. */
  lateAfterMs?: number;
  /** After the last send, how long the answers may take; the rest are abandoned and count as errors. */
  drainTimeoutMs?: number;
  /** Stop as soon as the outcome is decided (a capacity search needs no more than that). */
  giveUp?: GiveUp;
}

/** Stop after `slowCount` measured answers slower than `slowerThanMs`, or after `errorCount` errors. */
export interface GiveUp {
  slowerThanMs: number;
  slowCount: number;
  errorCount?: number;
}

export interface OpenLoopResult {
  rate: number;
  durationSeconds: number;
  /** Measured requests sent (warm-up excluded). */
  sent: number;
  /** Measured requests answered 200 with the whole body read. */
  ok: number;
  /** Measured requests answered with another status, failed, or abandoned at the drain timeout. */
  errors: number;
  /** Answered 200 per second, from the first measured scheduled send to the last measured answer. */
  achievedRate: number;
  /** Of the 200s, in ms, from each request's SCHEDULED send: time spent waiting to be sent counts. */
  latency: LatencySummary;
  /** The same in µs, for merging or re-plotting. */
  histogram: Histogram;
  /** Of the 200s, in ms, from the moment the generator handed each to the pool: its own lag removed. */
  latencyFromSend: LatencySummary;
  /** Measured requests that left more than `lateAfterMs` behind schedule: the generator fell behind. */
  lateSends: number;
  /** How far behind schedule measured requests left, ms (timer granularity alone makes ~1 ms). */
  sendLag: { p50: number; p99: number; max: number };
  /** Everything sent and answered 200, warm-up included: divisors for per-request CPU. */
  total: { sent: number; ok: number; errors: number };
  /** `giveUp` fired: sending stopped and the requests still in flight were abandoned uncounted. */
  stoppedEarly: boolean;
  /** Up to five distinct error descriptions. */
  errorSamples: string[];
}

type Defaulted = Required<Pick<OpenLoopOptions, "warmupSeconds" | "connections" | "lateAfterMs" | "drainTimeoutMs">>;
export const openLoopDefaults: Readonly<Defaulted> = { warmupSeconds: 0, connections: 256, lateAfterMs: 2, drainTimeoutMs: 5_000 };

/** When request `i` is due, in ns after the start. */
export function sendOffsetNs(i: number, rate: number): number {
  return Math.round((i * 1e9) / rate);
}

/** The index after the last request due by `elapsedNs`, counting on from `next`, at most `limit`. */
export function dueThrough(next: number, elapsedNs: number, rate: number, limit: number): number {
  let i = next;
  while (i < limit && sendOffsetNs(i, rate) <= elapsedNs) i++;
  return i;
}

/** How many requests a window of `seconds` holds at `rate`. */
export function requestsIn(seconds: number, rate: number): number {
  return Math.round(seconds * rate);
}

/**
 * Open-loop load: requests leave on a fixed schedule whatever the answers do, as independent
 * clients would send them, and each latency runs from the request's scheduled send. A closed loop
 * (send, wait, send) slows down with the server and records one slow answer where a real stream
 * of clients would have queued many (coordinated omission); here the queueing shows.
 *
 * The schedule is kept with timers (about 1 ms granularity; a busy wait would take a core from
 * the services on a small machine); requests due together leave together, and the lag is reported.
 */
export async function runOpenLoop(target: RequestTarget, options: OpenLoopOptions): Promise<OpenLoopResult> {
  const { rate, durationSeconds } = options;
  if (!(rate > 0) || !(durationSeconds > 0)) throw new Error(`open loop: rate and duration must be positive (${rate}/s, ${durationSeconds} s)`);
  const { warmupSeconds, connections, lateAfterMs, drainTimeoutMs } = withDefaults<Defaulted>(openLoopDefaults, options);
  const giveUp = options.giveUp;
  const warmupCount = requestsIn(warmupSeconds, rate);
  const limit = warmupCount + requestsIn(durationSeconds, rate);

  const pool = new Pool(target.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const request = { method: "POST", path: target.path, headers: target.headers, body: target.body } as const;
  const histogram = createLatencyHistogram();
  const fromSend = createLatencyHistogram();
  const lag = createLatencyHistogram();
  const samples = new Set<string>();
  const total = { sent: 0, ok: 0, errors: 0 };
  let ok = 0;
  let errors = 0;
  let late = 0;
  let slow = 0;
  let lastAnswer: bigint | undefined;
  let inFlight = 0;
  let sendingDone = false;
  let stoppedEarly = false;
  let drainExpired = false;
  let destroyed: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));

  const abandon = () => {
    destroyed ??= pool.destroy().catch(() => {});
  };
  const settleIfDone = () => {
    if (sendingDone && inFlight === 0) finish();
  };
  const stop = () => {
    if (stoppedEarly) return;
    stoppedEarly = true;
    sendingDone = true;
    if (timer) clearTimeout(timer);
    abandon();
    settleIfDone();
  };

  const one = async (scheduled: bigint, sentAt: bigint, measured: boolean) => {
    let failure: string | undefined;
    try {
      const res = await pool.request(request);
      // The whole body counts: a server that answers headers early but buffers the body is slow.
      const body = await res.body.arrayBuffer();
      if (res.statusCode !== 200) failure = `status ${res.statusCode}: ${Buffer.from(body).toString("utf8").slice(0, 200)}`;
    } catch (err) {
      if (stoppedEarly && !drainExpired) return; // abandoned by giveUp: not the server's error
      failure = drainExpired ? `no answer within ${drainTimeoutMs} ms after the last send` : (err as Error).message;
    }
    const now = process.hrtime.bigint();
    if (failure !== undefined) {
      total.errors++;
      if (samples.size < 5) samples.add(failure);
      if (measured && ++errors >= (giveUp?.errorCount ?? Number.POSITIVE_INFINITY)) stop();
      return;
    }
    total.ok++;
    if (!measured) return;
    ok++;
    lastAnswer = now;
    const micros = microsSince(scheduled, now);
    histogram.recordValue(micros);
    fromSend.recordValue(microsSince(sentAt, now));
    if (giveUp && micros > giveUp.slowerThanMs * 1000 && ++slow >= giveUp.slowCount) stop();
  };

  const start = process.hrtime.bigint();
  let next = 0;
  const pump = () => {
    timer = undefined;
    if (sendingDone) return;
    const due = dueThrough(next, Number(process.hrtime.bigint() - start), rate, limit);
    for (; next < due && !sendingDone; next++) {
      const scheduled = start + BigInt(sendOffsetNs(next, rate));
      const sentAt = process.hrtime.bigint();
      const measured = next >= warmupCount;
      if (measured) {
        lag.recordValue(microsSince(scheduled, sentAt));
        if (sentAt - scheduled > BigInt(Math.round(lateAfterMs * 1e6))) late++;
      }
      total.sent++;
      inFlight++;
      void one(scheduled, sentAt, measured).finally(() => {
        inFlight--;
        settleIfDone();
      });
    }
    if (sendingDone) return;
    if (next >= limit) {
      sendingDone = true;
      const drain = setTimeout(() => {
        drainExpired = true;
        abandon();
      }, drainTimeoutMs);
      void finished.then(() => clearTimeout(drain));
      settleIfDone();
      return;
    }
    const waitMs = (sendOffsetNs(next, rate) - Number(process.hrtime.bigint() - start)) / 1e6;
    timer = setTimeout(pump, Math.max(0, waitMs));
  };
  pump();
  await finished;
  if (destroyed) await destroyed;
  else await pool.close();

  const firstMeasured = start + BigInt(sendOffsetNs(warmupCount, rate));
  const spanSeconds = lastAnswer === undefined ? 0 : Number(lastAnswer - firstMeasured) / 1e9;
  const lagSummary = summarize(lag);
  return {
    rate,
    durationSeconds,
    sent: total.sent - Math.min(total.sent, warmupCount),
    ok,
    errors,
    achievedRate: spanSeconds > 0 ? ok / spanSeconds : 0,
    latency: summarize(histogram),
    histogram,
    latencyFromSend: summarize(fromSend),
    lateSends: late,
    sendLag: { p50: lagSummary.p50, p99: lagSummary.p99, max: lagSummary.max },
    total,
    stoppedEarly,
    errorSamples: [...samples],
  };
}
