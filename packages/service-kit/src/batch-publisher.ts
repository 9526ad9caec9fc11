import { InvalidMessageError, PayloadTooLargeError, type Bus } from "@gw/bus";
import { MAX_USAGE_BATCH, type UsageRecord, type UsageRecordRow, usageRowOf, usageRowsBatchId, usageRowsMessageOf } from "@gw/contracts";
import type { Logger } from "@gw/logger";
import type { Counter, Gauge } from "prom-client";
import { Counter as PromCounter, Gauge as PromGauge } from "prom-client";
import type { ServiceMetrics } from "./metrics";

/** An item, or what makes it when its batch is formed. */
export type BatchSource<T> = T | (() => T | undefined);
export type UsageSource = BatchSource<UsageRecordRow>;

/** What a publisher sends and how: one message per batch. */
export interface BatchKind<T> {
  /** The items' name in logs ("usage records"), and the prefix of the metrics (`gw_usage_records`). */
  noun: string;
  metric: string;
  /** Most items in one message. */
  maxBatch: number;
  /** What an item adds to its message, in bytes, with `maxBytes`: a batch closes before it passes it. */
  bytesOf?(item: T): number;
  maxBytes?: number;
  send(bus: Bus, batch: T[]): Promise<void>;
  /** Names an item in a log line. */
  idOf(item: T): string;
}

/** Usage records in their row form (usageRowFields), as ingress makes them: no record object in between. */
export const usageRowsKind: BatchKind<UsageRecordRow> = {
  noun: "usage records",
  metric: "gw_usage_records",
  maxBatch: MAX_USAGE_BATCH,
  send: (bus, rows) => bus.enqueue("usage.records", usageRowsMessageOf(rows), { msgId: usageRowsBatchId(rows) }),
  idOf: (row) => String(row[0]),
};

/** Usage records as objects (the job workers' and the jobs service's), sent as rows. */
export const usageRecordsKind: BatchKind<UsageRecord> = {
  noun: usageRowsKind.noun,
  metric: usageRowsKind.metric,
  maxBatch: usageRowsKind.maxBatch,
  send: (bus, records) => usageRowsKind.send(bus, records.map(usageRowOf)),
  idOf: (record) => record.request_id,
};

export interface UsagePublisherOptions {
  bus: Bus;
  logger: Logger;
  metrics?: ServiceMetrics;
  /** Records held while the bus cannot take them (NATS down, the usage stream full); beyond, dropped and counted. */
  maxQueued?: number;
  /** Batches awaiting the stream's acknowledgement at once. */
  concurrency?: number;
  /** Longest pause between tries while the bus refuses. */
  maxBackoffMs?: number;
  /** Items per message (at most the kind's). */
  maxBatch?: number;
  /** How long a record waits for others to share its message before it goes alone. */
  lingerMs?: number;
}

/**
 * Hands items (usage records, detailed logs' bodies) to the bus off the request path: `publish`
 * only queues (no await, no I/O), and a small pump sends them in batches, one message per batch (as
 * many as the kind allows, by count and by bytes), with a bounded number awaiting the stream's
 * acknowledgement. A JetStream publish costs about a hundred microseconds of CPU whatever it carries,
 * so an item waits up to `lingerMs` for others to share its message (a full batch goes at once).
 * While the bus refuses (NATS restarting, the usage stream at its limit), batches wait in memory and
 * are tried again with backoff, so an outage costs a delay, not items; only past `maxQueued` is an
 * item dropped, counted and logged. A batch keeps its message id across tries, so a retry after a
 * lost acknowledgement is dropped by the stream (and by the ledger, which deduplicates by request id).
 */
export class BatchPublisher<T> {
  /** Items not yet in a batch, oldest first (some still to be made). */
  private queue: BatchSource<T>[] = [];
  private head = 0;
  /** An item made for a batch it did not fit in (by bytes): the first of the next. */
  private carry: T | undefined;
  /** Batches to send again (refused by the bus, or split because one was too large or malformed). */
  private retries: T[][] = [];
  private inFlight = 0;
  private inFlightRecords = 0;
  private failures = 0;
  private pausedUntil = 0;
  /** Set when the oldest queued record has waited `lingerMs` (or a flush asks): partial batches go. */
  private due = false;
  private flushing = false;
  private lingerTimer: NodeJS.Timeout | undefined;
  private backoffTimer: NodeJS.Timeout | undefined;
  private idle: (() => void)[] = [];
  private readonly maxQueued: number;
  private readonly concurrency: number;
  private readonly maxBackoffMs: number;
  private readonly maxBatch: number;
  private readonly lingerMs: number;
  private readonly dropped?: Counter<string>;
  private readonly published?: Counter<string>;
  private readonly waiting?: Gauge<string>;
  private lastDropLog = 0;

  constructor(
    private readonly options: UsagePublisherOptions,
    private readonly kind: BatchKind<T>,
  ) {
    this.maxQueued = options.maxQueued ?? 200_000;
    this.concurrency = options.concurrency ?? 8;
    this.maxBackoffMs = options.maxBackoffMs ?? 5_000;
    this.maxBatch = Math.max(1, Math.min(kind.maxBatch, options.maxBatch ?? kind.maxBatch));
    // A second: at a light load each process then sends about one message a second, which keeps the
    // usage stream's message limit days away; a full batch goes at once whatever the load.
    this.lingerMs = options.lingerMs ?? 1_000;
    const registers = options.metrics ? [options.metrics.registry] : [];
    if (options.metrics) {
      const noun = kind.noun[0]?.toUpperCase() + kind.noun.slice(1);
      this.published = new PromCounter({ name: `${kind.metric}_published_total`, help: `${noun} the bus acknowledged`, registers });
      this.dropped = new PromCounter({
        name: `${kind.metric}_dropped_total`,
        help: `${noun} dropped because too many were waiting for the bus, or the bus refused them as malformed`,
        registers,
      });
      this.waiting = new PromGauge({
        name: `${kind.metric}_waiting`,
        help: `${noun} waiting for the bus`,
        registers,
        collect: () => this.waiting?.set(this.pending),
      });
    }
  }

  /** Items queued, waiting to be sent again, or awaiting acknowledgement. */
  get pending(): number {
    return this.queued + this.inFlightRecords;
  }

  private get queued(): number {
    let n = this.queue.length - this.head + (this.carry === undefined ? 0 : 1);
    for (const batch of this.retries) n += batch.length;
    return n;
  }

  /**
   * Queues an item, or a function that makes it: an item made when its batch is formed costs less
   * than one made alone after its request (it is made with others, in a loop, while warm). False
   * when it was dropped: too many are waiting for the bus.
   */
  publish(record: BatchSource<T>): boolean {
    if (this.queue.length - this.head >= this.maxQueued) {
      this.dropped?.inc();
      const now = Date.now();
      if (now - this.lastDropLog > 10_000) {
        this.lastDropLog = now;
        this.options.logger.error({ waiting: this.pending }, `${this.kind.noun}: the bus has refused them for too long; dropping new ones`);
      }
      return false;
    }
    this.queue.push(record);
    if (this.queue.length - this.head >= this.maxBatch) this.pump();
    else this.lingerTimer ??= setTimeout(this.linger, this.lingerMs);
    return true;
  }

  /** Resolves once everything queued has been acknowledged, or after `timeoutMs` (what is left is logged). */
  async flush(timeoutMs = 5_000): Promise<void> {
    if (this.pending === 0) return;
    this.flushing = true;
    this.pump();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([new Promise<void>((resolve) => this.idle.push(resolve)), timedOut]);
    clearTimeout(timer);
    this.flushing = false;
    if (this.pending > 0) this.options.logger.warn({ waiting: this.pending }, `${this.kind.noun}: stopping with some the bus has not taken`);
  }

  /** Stops retrying (after flush); records still waiting are dropped. */
  stop(): void {
    clearTimeout(this.lingerTimer);
    clearTimeout(this.backoffTimer);
    this.lingerTimer = undefined;
    this.backoffTimer = undefined;
    this.queue = [];
    this.head = 0;
    this.carry = undefined;
    this.retries = [];
  }

  private readonly linger = (): void => {
    this.lingerTimer = undefined;
    this.due = true;
    this.pump();
  };

  private pump(): void {
    if (this.backoffTimer) return;
    const wait = this.pausedUntil - Date.now();
    if (wait > 0) {
      this.backoffTimer = setTimeout(() => {
        this.backoffTimer = undefined;
        this.pump();
      }, wait);
      return;
    }
    while (this.inFlight < this.concurrency) {
      const batch = this.nextBatch();
      if (!batch) break;
      this.send(batch);
    }
    if (this.head === this.queue.length && this.carry === undefined) {
      this.queue = [];
      this.head = 0;
      this.due = false;
      clearTimeout(this.lingerTimer);
      this.lingerTimer = undefined;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      // Compact now and then rather than shifting on every batch.
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private nextBatch(): T[] | undefined {
    const retry = this.retries.shift();
    if (retry) return retry;
    const queued = this.queue.length - this.head + (this.carry === undefined ? 0 : 1);
    if (queued === 0 || (queued < this.maxBatch && !this.due && !this.flushing)) return undefined;
    const { bytesOf, maxBytes = Number.POSITIVE_INFINITY } = this.kind;
    const batch: T[] = [];
    let bytes = 0;
    const take = (item: T): boolean => {
      const size = bytesOf ? bytesOf(item) : 0;
      if (batch.length > 0 && bytes + size > maxBytes) {
        this.carry = item;
        return false;
      }
      batch.push(item);
      bytes += size;
      return true;
    };
    const carried = this.carry;
    this.carry = undefined;
    if (carried !== undefined) take(carried);
    while (batch.length < this.maxBatch && this.head < this.queue.length && this.carry === undefined) {
      const source = this.queue[this.head++] as BatchSource<T>;
      const item = typeof source === "function" ? this.make(source as () => T | undefined) : source;
      if (item !== undefined) take(item);
    }
    return batch.length > 0 ? batch : this.nextBatch();
  }

  private make(source: () => T | undefined): T | undefined {
    try {
      return source();
    } catch (err) {
      this.dropped?.inc();
      this.options.logger.error({ err }, `${this.kind.noun}: making one failed; dropped`);
      return undefined;
    }
  }

  private send(batch: T[]): void {
    this.inFlight++;
    this.inFlightRecords += batch.length;
    this.kind.send(this.options.bus, batch).then(
      () => this.settled(batch),
      (err: unknown) => this.settled(batch, err ?? new Error("refused")),
    );
  }

  private settled(batch: T[], err?: unknown): void {
    this.inFlight--;
    this.inFlightRecords -= batch.length;
    if (err === undefined) {
      this.failures = 0;
      this.published?.inc(batch.length);
    } else if (err instanceof InvalidMessageError || err instanceof PayloadTooLargeError) {
      // Sending it again as it is could never succeed. Halves isolate the record at fault (a bug
      // to fix, not an outage to wait out) and let the rest through.
      if (batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        this.retries.unshift(batch.slice(0, half), batch.slice(half));
      } else {
        this.dropped?.inc();
        const [alone] = batch;
        this.options.logger.error(
          { err, item: alone === undefined ? undefined : this.kind.idOf(alone) },
          `${this.kind.noun}: one was refused by the bus as malformed; dropped`,
        );
      }
    } else {
      this.retries.push(batch);
      this.failures++;
      this.pausedUntil = Date.now() + Math.min(this.maxBackoffMs, 100 * 2 ** Math.min(this.failures, 10));
      if (this.failures === 1 || this.failures % 100 === 0) {
        this.options.logger.warn({ err, waiting: this.pending }, `${this.kind.noun}: the bus refused them; they will be tried again`);
      }
    }
    if (this.pending === 0) {
      for (const resolve of this.idle.splice(0)) resolve();
      return;
    }
    this.pump();
  }
}

/** Usage records as rows (usageRowOf), up to MAX_USAGE_BATCH to a message on `usage.records`. */
export class UsagePublisher extends BatchPublisher<UsageRecordRow> {
  constructor(options: UsagePublisherOptions) {
    super(options, usageRowsKind);
  }
}
