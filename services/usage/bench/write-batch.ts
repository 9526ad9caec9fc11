/**
 * The ledger's batch statement on its own: batches of records written one at a time by
 * LedgerWriter, alternating between its two statements (the one that fails on a record already
 * written, and the one that skips such records), with the time of each write from the client.
 * One connection and nothing else running: the time is mostly Postgres's work on the statement
 * (the batch's JSON, its partitions' check and the round trip are in it too, alike for both), and
 * the alternation makes a slower machine slow both alike.
 *
 *   pnpm tsx services/usage/bench/write-batch.ts [--records 200000] [--batch 500]
 *
 * Uses DATABASE_URL's server (else the local one), in a fresh database dropped after the run.
 */
import { parseArgs } from "node:util";
import { createPgDb, runMigrations } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createPricer } from "@gw/pricing";
import { createTestDatabase } from "@gw/testkit";
import { toLedgerRow } from "../src/ingest/ledger-row";
import { LedgerWriter } from "../src/ingest/ledger-writer";
import { RecordPartitions } from "../src/partitions";
import { usageMigrations } from "../src/service";
import { benchRecords } from "./records";

const { values: args } = parseArgs({ options: { records: { type: "string", default: "200000" }, batch: { type: "string", default: "500" } } });
const total = Number(args.records);
const size = Number(args.batch);
/** The first batches of each kind warm the plan caches and the partitions' first pages. */
const WARM_UP_BATCHES = 20;
const logger = createLogger({ service: "usage-bench", level: "warn" });
const { gateway, recordAt } = benchRecords(total, Date.now());
const pricer = createPricer(gateway);

const database = await createTestDatabase();
const db = createPgDb({ url: database.url, logger, max: 1 });
try {
  await runMigrations(db, { schema: "usage", dir: usageMigrations, logger });
  const writer = new LedgerWriter(db, new RecordPartitions(db));
  const times = { "fails on a duplicate": [] as number[], "skips duplicates": [] as number[] };
  for (let b = 0; b * size < total; b++) {
    const rows = Array.from({ length: Math.min(size, total - b * size) }, (_, j) => toLedgerRow(recordAt(b * size + j), pricer).row!);
    const skipping = b % 2 === 1;
    const t = performance.now();
    const result = await writer.write(rows, { skipDuplicates: skipping });
    const ms = performance.now() - t;
    if (result.inserted.length !== rows.length) throw new Error(`batch ${b}: ${result.inserted.length} of ${rows.length} inserted`);
    if (b >= 2 * WARM_UP_BATCHES) times[skipping ? "skips duplicates" : "fails on a duplicate"].push(ms);
  }
  for (const [statement, ms] of Object.entries(times)) {
    ms.sort((a, b) => a - b);
    const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
    const perRecord = (v: number) => ((v * 1000) / size).toFixed(1);
    console.log(
      `${statement}: ${ms.length} batches of ${size}, median ${ms[ms.length >> 1]!.toFixed(2)} ms (${perRecord(ms[ms.length >> 1]!)} µs a record), mean ${mean.toFixed(2)} ms`,
    );
  }
} finally {
  await db.close();
  await database.drop();
}
