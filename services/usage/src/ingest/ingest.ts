import { MAX_USAGE_BATCH, type UsageRecord } from "@gw/contracts";
import type { Logger } from "@gw/logger";
import type { Pricer } from "../pricing";
import { retainedFrom } from "../partitions";
import { Batcher, type BatcherOptions } from "./batcher";
import { type LedgerRow, toLedgerRow } from "./ledger-row";
import { isUsageRecord, usageRecordErrors } from "./record-check";
import type { LedgerWriter, WriteResult } from "./ledger-writer";

/** The counters ingest keeps (prom-client's satisfy these shapes). */
export interface IngestMetrics {
  ingested: { inc(value?: number): void };
  duplicates: { inc(value?: number): void };
  expired: { inc(value?: number): void };
  invalid: { inc(value?: number): void };
  unpriced: { inc(labels: { model: string }, value?: number): void };
  failedBatches: { inc(value?: number): void };
}

export interface IngestOptions {
  writer: LedgerWriter;
  pricer: Pricer;
  logger: Logger;
  metrics: IngestMetrics;
  clock: () => number;
  retentionDays: number;
  /** Public model names of the configuration: the only values the unpriced metric's label takes. */
  models: ReadonlySet<string>;
  batch?: Partial<Pick<BatcherOptions<LedgerRow>, "maxItems" | "enoughItems" | "maxWaitMs" | "maxConcurrentWrites">>;
}

// SQLSTATE classes of errors a record's own data can cause (a value out of range, a constraint, a
// limit): a batch failing so is retried record by record, so one bad record cannot hold back the rest.
const DATA_ERROR_CLASSES = ["22", "23", "54"];

function isDataError(err: unknown): boolean {
  const code = typeof err === "object" && err !== null && "code" in err ? String((err as { code: unknown }).code) : "";
  return DATA_ERROR_CLASSES.includes(code.slice(0, 2));
}

/**
 * Records one batch statement writes at most: four full messages. A statement upserts one roll-up,
 * model and line row per key its records share, so the more of a key's records it carries, the
 * fewer upserts a record costs (docs/usage-ledger.md, "Batches of 2,048 records"). A light load is
 * unchanged: a message still goes at once (enoughItems).
 */
export const LEDGER_BATCH = 4 * MAX_USAGE_BATCH;

/**
 * The consuming side of the ledger: each bus handler hands its record here and waits for the
 * commit of the batch that carries it. Records older than retention are acknowledged unwritten.
 */
export class Ingest {
  private readonly batcher: Batcher<LedgerRow>;

  constructor(private readonly options: IngestOptions) {
    this.batcher = new Batcher<LedgerRow>({
      maxItems: options.batch?.maxItems ?? LEDGER_BATCH,
      // Half a full message or more goes at once while nothing is being written: at a light load a
      // message holds what a second brought, and the wait would only wake the process twice for it.
      enoughItems: options.batch?.enoughItems ?? MAX_USAGE_BATCH / 2,
      // A partial batch waits this long for more: each batch costs a statement (parsed and planned)
      // and a round trip whatever its size, so at a light load fewer, fuller ones cost less CPU per record.
      maxWaitMs: options.batch?.maxWaitMs ?? 250,
      maxConcurrentWrites: options.batch?.maxConcurrentWrites ?? 2,
      write: (rows) => this.write(rows),
    });
  }

  /** The bus handler for one record: resolves after it is committed (or known), throws to be redelivered. */
  readonly handle = (record: UsageRecord): Promise<void> => {
    const row = this.rowOf(record);
    return row ? this.batcher.add([row]) : Promise.resolve();
  };

  /**
   * The bus handler for one message: its records are checked one by one (the bus checks only the
   * batch), join the open batch together, and the message is acknowledged once all are committed.
   * Should one batch fail, the message comes again and the records already committed are counted as
   * duplicates.
   */
  readonly handleAll = (records: readonly unknown[]): Promise<void> => {
    const rows: LedgerRow[] = [];
    for (const raw of records) {
      const record = this.check(raw);
      const row = record && this.rowOf(record);
      if (row) rows.push(row);
    }
    return rows.length > 0 ? this.batcher.add(rows) : Promise.resolve();
  };

  /**
   * A record as the ledger keeps it, or undefined for one it cannot: a record whose call outcome (the
   * backend's report, which ingress passes on unchecked) is malformed is kept without it.
   */
  private check(raw: unknown): UsageRecord | undefined {
    if (isUsageRecord(raw)) return raw;
    const errors = usageRecordErrors();
    const { logger, metrics } = this.options;
    if (typeof raw === "object" && raw !== null && "outcome" in raw) {
      const { outcome, ...rest } = raw as Record<string, unknown>;
      if (isUsageRecord(rest)) {
        logger.error({ errors, request_id: rest.request_id, outcome }, "usage: a record's call outcome is malformed; kept without it");
        return rest;
      }
    }
    metrics.invalid.inc();
    logger.error({ errors, record: raw }, "usage: a malformed usage record was dropped");
    return undefined;
  }

  private rowOf(record: UsageRecord): LedgerRow | undefined {
    if (record.started_at < retainedFrom(this.options.clock(), this.options.retentionDays)) {
      this.options.metrics.expired.inc();
      this.options.logger.debug({ request_id: record.request_id }, "usage: record older than retention, dropped");
      return undefined;
    }
    const { row, pricingError } = toLedgerRow(record, this.options.pricer);
    if (pricingError !== undefined) {
      this.options.logger.warn({ err: pricingError, request_id: record.request_id, model: record.model }, "usage: pricing failed, record kept unpriced");
    }
    return row;
  }

  /** Writes what is waiting and waits for batches being written. */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async write(rows: LedgerRow[]): Promise<(Error | null)[]> {
    try {
      this.count(await this.options.writer.write(rows));
      return rows.map(() => null);
    } catch (err) {
      this.options.metrics.failedBatches.inc();
      if (rows.length === 1 || !isDataError(err)) throw err;
      this.options.logger.warn({ err, records: rows.length }, "usage: a batch failed on its data; writing its records one by one");
      const outcomes: (Error | null)[] = [];
      for (const row of rows) {
        try {
          this.count(await this.options.writer.write([row]));
          outcomes.push(null);
        } catch (own) {
          if (!isDataError(own)) throw own;
          this.options.logger.error({ err: own, request_id: row.record.request_id }, "usage: a record could not be written");
          outcomes.push(own instanceof Error ? own : new Error(String(own)));
        }
      }
      return outcomes;
    }
  }

  private count(result: WriteResult): void {
    const { metrics, models } = this.options;
    metrics.ingested.inc(result.inserted.length);
    if (result.duplicates > 0) metrics.duplicates.inc(result.duplicates);
    for (const row of result.inserted) {
      if (row.cost !== null) continue;
      const model = row.record.model;
      metrics.unpriced.inc({ model: model === undefined ? "none" : models.has(model) ? model : "other" });
    }
  }
}
