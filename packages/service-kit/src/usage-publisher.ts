import { InvalidMessageError, PayloadTooLargeError, type Bus } from "@gw/bus";
import type { UsageRecord } from "@gw/contracts";
import type { Logger } from "@gw/logger";
import type { Counter, Gauge } from "prom-client";
import { Counter as PromCounter, Gauge as PromGauge } from "prom-client";
import type { ServiceMetrics } from "./metrics";

export interface UsagePublisherOptions {
  bus: Bus;
  logger: Logger;
  metrics?: ServiceMetrics;
  /** Records held while the bus cannot take them (NATS down, the usage stream full); beyond, dropped and counted. */
  maxQueued?: number;
  /** Publishes awaiting the stream's acknowledgement at once. */
  concurrency?: number;
  /** Longest pause between tries while the bus refuses. */
  maxBackoffMs?: number;
}

/**
 * Hands usage records to the bus off the request path: `publish` only queues (no await, no I/O), and a
 * small pump sends them with a bounded number awaiting the stream's acknowledgement. While the bus
 * refuses (NATS restarting, the usage stream at its limit), records wait in memory and are tried
 * again with backoff, so a NATS outage costs a delay, not records; only past `maxQueued` is a record
 * dropped, counted and logged. The request id is the message id, so a retry after a lost
 * acknowledgement is deduplicated by the stream and by the ledger.
 */
export class UsagePublisher {
  private queue: UsageRecord[] = [];
  private head = 0;
  private inFlight = 0;
  private failures = 0;
  private pausedUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private idle: (() => void)[] = [];
  private readonly maxQueued: number;
  private readonly concurrency: number;
  private readonly maxBackoffMs: number;
  private readonly dropped?: Counter<string>;
  private readonly published?: Counter<string>;
  private readonly waiting?: Gauge<string>;
  private lastDropLog = 0;

  constructor(private readonly options: UsagePublisherOptions) {
    this.maxQueued = options.maxQueued ?? 200_000;
    this.concurrency = options.concurrency ?? 64;
    this.maxBackoffMs = options.maxBackoffMs ?? 5_000;
    const registers = options.metrics ? [options.metrics.registry] : [];
    if (options.metrics) {
      this.published = new PromCounter({ name: "gw_usage_records_published_total", help: "Usage records the bus acknowledged", registers });
      this.dropped = new PromCounter({
        name: "gw_usage_records_dropped_total",
        help: "Usage records dropped because too many were waiting for the bus",
        registers,
      });
      this.waiting = new PromGauge({
        name: "gw_usage_records_waiting",
        help: "Usage records waiting for the bus",
        registers,
        collect: () => this.waiting?.set(this.pending),
      });
    }
  }

  /** Records queued or awaiting acknowledgement. */
  get pending(): number {
    return this.queue.length - this.head + this.inFlight;
  }

  publish(record: UsageRecord): void {
    if (this.queue.length - this.head >= this.maxQueued) {
      this.dropped?.inc();
      const now = Date.now();
      if (now - this.lastDropLog > 10_000) {
        this.lastDropLog = now;
        this.options.logger.error({ waiting: this.pending }, "usage: the bus has refused records for too long; dropping new ones");
      }
      return;
    }
    this.queue.push(record);
    this.pump();
  }

  /** Resolves once everything queued has been acknowledged, or after `timeoutMs` (what is left is logged). */
  async flush(timeoutMs = 5_000): Promise<void> {
    if (this.pending === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([new Promise<void>((resolve) => this.idle.push(resolve)), timedOut]);
    clearTimeout(timer);
    if (this.pending > 0) this.options.logger.warn({ waiting: this.pending }, "usage: stopping with records the bus has not taken");
  }

  private pump(): void {
    if (this.timer) return;
    const wait = this.pausedUntil - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, wait);
      return;
    }
    while (this.inFlight < this.concurrency && this.head < this.queue.length) {
      const record = this.queue[this.head++] as UsageRecord;
      this.inFlight++;
      this.options.bus.enqueue("usage.records", record, { msgId: record.request_id }).then(
        () => this.settled(undefined),
        (err: unknown) => this.settled(record, err),
      );
    }
    // Compact now and then rather than shifting on every record.
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private settled(failed: UsageRecord | undefined, err?: unknown): void {
    this.inFlight--;
    if (failed && (err instanceof InvalidMessageError || err instanceof PayloadTooLargeError)) {
      // Sending it again could never succeed: a bug to fix, not an outage to wait out.
      this.dropped?.inc();
      this.options.logger.error({ err, request: failed.request_id }, "usage: a usage record was refused by the bus as malformed; dropped");
      failed = undefined;
      if (this.pending === 0) {
        for (const resolve of this.idle.splice(0)) resolve();
        return;
      }
      this.pump();
      return;
    }
    if (failed) {
      this.queue.push(failed);
      this.failures++;
      this.pausedUntil = Date.now() + Math.min(this.maxBackoffMs, 100 * 2 ** Math.min(this.failures, 10));
      if (this.failures === 1 || this.failures % 100 === 0) {
        this.options.logger.warn({ err, waiting: this.pending }, "usage: the bus refused a usage record; it will be tried again");
      }
    } else {
      this.failures = 0;
      this.published?.inc();
    }
    if (this.pending === 0) {
      for (const resolve of this.idle.splice(0)) resolve();
      return;
    }
    this.pump();
  }

  /** Stops retrying (after flush); records still waiting are dropped. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
    this.head = 0;
  }
}
