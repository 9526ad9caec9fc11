/**
 * Ingest rate of the usage service: how fast it drains a backlog of usage records into Postgres.
 *
 *   pnpm tsx services/usage/bench/ingest.ts [--records 200000] [--source nats|direct|memory] [--batch 2048]
 *                                          [--writers 2] [--in-flight 32] [--max-ack-pending N]
 *                                          [--database postgres://root@127.0.0.1:5432/postgres] [--nats nats://127.0.0.1:4222]
 *
 * `--source nats` (the default): the records are first published on a fresh namespace's usage
 * stream (by a child process) with the service down, as after an outage; then the service starts
 * and the clock runs until the last record is committed: the catch-up rate, end to end.
 * `--source direct`: the records are handed to the service's ingest as the bus handler hands them
 * (as many in flight as `--in-flight` full messages hold), without a bus: pricing, batching and the
 * transactions alone.
 * `--source memory`: through the in-process bus of the embedded default.
 * A fresh database is created for the run and dropped after it.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type Bus, createInProcessBus, createNatsBus, removeNatsNamespace } from "@gw/bus";
import { MAX_USAGE_BATCH, usageBatchId, usageRowsMessage } from "@gw/contracts";
import { type Db, runMigrations } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createPricer } from "@gw/pricing";
import { connect } from "nats";
import { Ingest, LEDGER_BATCH } from "../src/ingest/ingest";
import { LedgerWriter } from "../src/ingest/ledger-writer";
import { RecordPartitions } from "../src/partitions";
import { benchDatabase, benchSecret as secret, benchUsageService } from "./bench-db";
import { benchRecords } from "./records";
import { CONSUME_CONCURRENCY, usageMigrations } from "../src/service";

const { values: args } = parseArgs({
  options: {
    records: { type: "string", default: "200000" },
    source: { type: "string", default: "nats" },
    batch: { type: "string", default: String(LEDGER_BATCH) },
    writers: { type: "string", default: "2" },
    "in-flight": { type: "string", default: String(CONSUME_CONCURRENCY) },
    database: { type: "string", default: process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/postgres" },
    nats: { type: "string", default: process.env.NATS_URL ?? "nats://127.0.0.1:4222" },
    // What-if: raise the consumer's max_ack_pending (the bus leaves NATS's default, 1,000) once it exists.
    "max-ack-pending": { type: "string" },
    // Internal: the child process that fills the stream, so the measured process only consumes.
    "publish-to": { type: "string" },
    now: { type: "string" },
  },
});
const total = Number(args.records);
const batch = { maxItems: Number(args.batch), maxConcurrentWrites: Number(args.writers), inFlight: Number(args["in-flight"]) };
const logger = createLogger({ service: "usage-bench", level: "warn" });
const now = Number(args.now ?? Date.now());

const { gateway, models, recordAt } = benchRecords(total, now);

/** Fills a namespace's usage stream with the run's records (in a child process). */
async function publish(namespace: string): Promise<void> {
  const publisher = await createNatsBus({ url: args.nats, secret, namespace, logger, name: "usage-bench-publisher" });
  for (let i = 0; i < total; i += 2_000) {
    const chunk = Array.from({ length: Math.min(2_000, total - i) }, (_, j) => recordAt(i + j));
    // As ingress sends them: full batches of MAX_USAGE_BATCH records, one message each.
    const batches = Array.from({ length: Math.ceil(chunk.length / MAX_USAGE_BATCH) }, (_, k) => chunk.slice(k * MAX_USAGE_BATCH, (k + 1) * MAX_USAGE_BATCH));
    await Promise.all(batches.map((records) => publisher.enqueue("usage.records", usageRowsMessage(records), { msgId: usageBatchId(records) })));
  }
  await publisher.close();
}

/** Runs the service on a bus until `total` records are in; returns the seconds it took. */
async function throughService(db: Db, bus: Bus, namespace: string, feed: () => Promise<void>): Promise<number> {
  const service = benchUsageService({
    gateway,
    bus,
    db,
    logger,
    batch,
  });
  const { url } = await service.start();
  if (args["max-ack-pending"] && args.source === "nats") {
    const nc = await connect({ servers: args.nats });
    const jsm = await nc.jetstreamManager();
    await jsm.consumers.update(`${namespace.toUpperCase()}_USAGE`, "usage_usage_records", { max_ack_pending: Number(args["max-ack-pending"]) });
    await nc.close();
  }
  const started = performance.now();
  await feed();
  const ingested = async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith("gw_usage_records_ingested_total"));
    return line ? Number(line.split(" ").pop()) : 0;
  };
  while ((await ingested()) < total) await new Promise((r) => setTimeout(r, 100));
  const seconds = (performance.now() - started) / 1000;
  await service.stop();
  return seconds;
}

/** Hands records to ingest as the bus handler would, 2,000 in flight, with no bus at all. */
async function direct(db: Db): Promise<number> {
  await runMigrations(db, { schema: "usage", dir: usageMigrations, logger });
  const partitions = new RecordPartitions(db);
  await partitions.maintain(now, 400);
  const counter = { inc() {} };
  const ingest = new Ingest({
    writer: new LedgerWriter(db, partitions),
    pricer: createPricer(gateway),
    logger,
    clock: () => now,
    retentionDays: 400,
    models: new Set(models),
    batch,
    metrics: { ingested: counter, duplicates: counter, expired: counter, invalid: counter, unpriced: counter, failedBatches: counter },
  });
  const started = performance.now();
  let next = 0;
  // `inFlight` counts messages of up to MAX_USAGE_BATCH records; fewer records in flight than a
  // batch holds would leave every batch waiting out its timer.
  await Promise.all(
    Array.from({ length: batch.inFlight * MAX_USAGE_BATCH }, async () => {
      while (next < total) await ingest.handle(recordAt(next++));
    }),
  );
  return (performance.now() - started) / 1000;
}

async function main(): Promise<void> {
  const { db, drop } = await benchDatabase(args.database, "gw_usage_bench", "gw-usage-bench");
  const namespace = `bench${Date.now().toString(36)}`;
  let bus: Bus | undefined;
  try {
    let seconds: number;
    let cpu: NodeJS.CpuUsage | undefined;
    if (args.source === "direct") {
      const before = process.cpuUsage();
      seconds = await direct(db);
      cpu = process.cpuUsage(before);
    } else if (args.source === "memory") {
      bus = createInProcessBus({ logger });
      const memory = bus;
      seconds = await throughService(db, memory, namespace, async () => {
        for (let i = 0; i < total; i += MAX_USAGE_BATCH) {
          const records = Array.from({ length: Math.min(MAX_USAGE_BATCH, total - i) }, (_, j) => recordAt(i + j));
          await memory.enqueue("usage.records", usageRowsMessage(records), { msgId: `m${i}` });
        }
      });
    } else {
      const started = performance.now();
      const self = fileURLToPath(import.meta.url);
      const execArgv = process.execArgv.filter((a) => !a.startsWith("--cpu-prof"));
      const child = spawnSync(
        process.execPath,
        [...execArgv, self, "--publish-to", namespace, "--records", String(total), "--now", String(now), "--nats", args.nats],
        {
          stdio: "inherit",
        },
      );
      if (child.status !== 0) throw new Error("publishing the records failed");
      console.log(`published ${total} records on the stream in ${((performance.now() - started) / 1000).toFixed(1)} s (service down)`);
      const before = process.cpuUsage();
      bus = await createNatsBus({ url: args.nats, secret, namespace, logger, name: "usage-bench" });
      seconds = await throughService(db, bus, namespace, async () => {});
      cpu = process.cpuUsage(before);
    }
    const ackPending = args["max-ack-pending"] ? `, max_ack_pending ${args["max-ack-pending"]}` : "";
    console.log(
      `ingested ${total} records in ${seconds.toFixed(2)} s: ${Math.round(total / seconds)} records/s ` +
        `(source ${args.source}, batch ${batch.maxItems}, writers ${batch.maxConcurrentWrites}, in flight ${batch.inFlight}${ackPending})`,
    );
    // The consuming process only (the publisher is a child, Postgres and NATS other processes).
    if (cpu) {
      const perRecord = (us: number) => (us / total).toFixed(1);
      console.log(`node CPU: ${perRecord(cpu.user + cpu.system)} us/record (user ${perRecord(cpu.user)}, system ${perRecord(cpu.system)})`);
    }
    const { rows } = await db.query<{ records: string; hourly: string; requests: string }>(
      "SELECT (SELECT count(*) FROM usage.records) AS records, (SELECT count(*) FROM usage.hourly) AS hourly, (SELECT sum(requests) FROM usage.hourly) AS requests",
    );
    console.log(`check: ${rows[0]?.records} records, ${rows[0]?.hourly} roll-up rows counting ${rows[0]?.requests} requests`);
  } finally {
    await bus?.close();
    await drop();
    if (args.source === "nats") {
      await removeNatsNamespace(args.nats, namespace);
    }
  }
}

if (args["publish-to"]) await publish(args["publish-to"]);
else await main();
