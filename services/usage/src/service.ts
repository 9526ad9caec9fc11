import { fileURLToPath } from "node:url";
import type { Bus, Consumer } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import { runMigrations, type Db } from "@gw/db";
import type { Logger } from "@gw/logger";
import { addCounter, createInternalHttp } from "@gw/service-kit";
import { Ingest, type IngestOptions } from "./ingest/ingest";
import { LedgerWriter } from "./ingest/ledger-writer";
import { BodyStore } from "./bodies";
import { RecordPartitions } from "./partitions";
import { defaultPricer } from "./default-pricer";
import type { Pricer } from "./pricing";
import { mountUsageRoutes } from "./routes";
import { HOUR_MS, MAX_USAGE_BATCH, usageRecordsOf } from "@gw/contracts";

export interface UsageSettings {
  host: string;
  port: number;
  internalSecret: string;
  /** GATEWAY_USAGE_RETENTION_DAYS: records and roll-ups older than this are dropped. */
  retentionDays: number;
}

export interface UsageDeps {
  settings: UsageSettings;
  /** The configuration the pricer reads prices from, and whose model names label the metrics. */
  gateway: GatewayConfig;
  db: Db;
  bus: Bus;
  logger: Logger;
  /** Milliseconds since the epoch; tests move it to close a month or age a partition. */
  clock?: () => number;
  /** Prices records; default `@gw/pricing` over `gateway`. */
  pricer?: Pricer;
  /**
   * Batching of ingest (defaults: 512 records or 250 ms, 256 written at once while no batch is
   * being written, two batches written at once, 32 messages of up to 512 records in flight from the
   * bus; see Ingest for why 512), and how long batches skip records already written once one has
   * met one (30 s; see LedgerWriter).
   */
  batch?: IngestOptions["batch"] & { inFlight?: number; skipDuplicatesForMs?: number };
}

export interface UsageService {
  start(): Promise<{ url: string }>;
  stop(): Promise<void>;
}

// Two levels up is services/ both from src/ and from any service's dist/ (embedded's bundle holds
// this module too), so the sources and every bundle find the same folder (see scripts/build.ts).
export const usageMigrations = fileURLToPath(new URL("../../usage/migrations", import.meta.url));

/**
 * Messages handled at once: each holds its records (up to MAX_USAGE_BATCH) until the batches
 * carrying them commit, so this is what lets a batch fill while the one before it is being written,
 * and what bounds the records held in memory (16,384 at most).
 */
export const CONSUME_CONCURRENCY = 16_384 / MAX_USAGE_BATCH;

/**
 * The usage service: consumes `usage.records` into the `usage` schema (day-partitioned records,
 * hourly roll-ups, statement lines) and answers usage, logs and statements. While it is down,
 * records wait in the stream; nothing on the request path depends on it.
 */
export function createUsageService(deps: UsageDeps): UsageService {
  const { settings, logger } = deps;
  const clock = deps.clock ?? Date.now;
  const partitions = new RecordPartitions(deps.db);
  const bodies = new BodyStore(deps.db, logger);
  let consumer: Consumer | undefined;
  let bodyConsumer: Consumer | undefined;
  let maintenance: NodeJS.Timeout | undefined;
  let maintaining: Promise<void> = Promise.resolve();
  const http = createInternalHttp({
    name: "usage",
    logger,
    host: settings.host,
    port: settings.port,
    internalSecret: settings.internalSecret,
    checks: { postgres: () => deps.db.ping(), nats: () => deps.bus.ping() },
    mount(app) {
      mountUsageRoutes(app, { db: deps.db, clock, bodies });
    },
  });
  const m = http.metrics;
  const ingest = new Ingest({
    writer: new LedgerWriter(deps.db, partitions, { skipDuplicatesForMs: deps.batch?.skipDuplicatesForMs }),
    pricer: deps.pricer ?? defaultPricer(deps.gateway),
    logger,
    clock,
    retentionDays: settings.retentionDays,
    models: new Set(Object.keys(deps.gateway.models)),
    batch: deps.batch,
    metrics: {
      ingested: addCounter(m, "gw_usage_records_ingested_total", "Usage records written to the ledger", []),
      duplicates: addCounter(m, "gw_usage_duplicate_records_total", "Usage records delivered again and skipped (already in the ledger)", []),
      expired: addCounter(m, "gw_usage_expired_records_total", "Usage records older than retention, acknowledged unwritten", []),
      invalid: addCounter(m, "gw_usage_invalid_records_total", "Usage records that were malformed, dropped (each logged)", []),
      unpriced: addCounter(m, "gw_usage_unpriced_records_total", "Usage records written without a price, by configured model", ["model"]),
      failedBatches: addCounter(m, "gw_usage_failed_batches_total", "Ingest transactions that failed (their records are delivered again)", []),
    },
  });

  const bodiesStored = addCounter(m, "gw_usage_bodies_total", "Captured bodies (detailed logs) handled, by result: written, duplicate, expired", ["result"]);

  const maintain = async (): Promise<void> => {
    await bodies.dropExpired(clock());
    const result = await partitions.maintain(clock(), settings.retentionDays);
    if (result.created.length > 0 || result.dropped.length > 0 || result.rollupRowsDeleted > 0) logger.info(result, "usage: partitions maintained");
  };

  return {
    async start() {
      await runMigrations(deps.db, { schema: "usage", dir: usageMigrations, logger });
      await partitions.list();
      await maintain();
      maintenance = setInterval(() => {
        maintaining = maintain().catch((err: unknown) => logger.error({ err }, "usage: partition maintenance failed; next try in an hour"));
      }, HOUR_MS);
      maintenance.unref();
      consumer = await deps.bus.consume(
        "usage.records",
        // A failed batch is retried a few seconds later, for hours: a database outage delays the
        // ledger and loses nothing while the stream keeps the records.
        { durable: "usage", concurrency: deps.batch?.inFlight ?? CONSUME_CONCURRENCY, maxDeliver: 10_000, retryDelayMs: 5_000 },
        (message) => ingest.handleAll(usageRecordsOf(message)),
      );
      bodyConsumer = await deps.bus.consume("usage.bodies", { durable: "usage", concurrency: 16, maxDeliver: 10_000, retryDelayMs: 5_000 }, async (message) => {
        for (const [result, n] of Object.entries(await bodies.write(message.bodies, clock()))) if (n > 0) bodiesStored.inc({ result }, n);
      });
      return { url: (await http.start()).url };
    },
    async stop() {
      await http.stop();
      clearInterval(maintenance);
      // Stopping the consumer waits for its handlers, which wait for their batches to commit.
      await consumer?.stop();
      await bodyConsumer?.stop();
      await ingest.drain();
      await maintaining;
    },
  };
}
