/**
 * The ledger's batch statement on its own: batches of records written one at a time by
 * LedgerWriter, alternating between its two statements (the one that fails on a record already
 * written, and the one that skips such records), with the time of each write from the client.
 * One connection and nothing else running: the time is mostly Postgres's work on the statement
 * (the batch's JSON, its partitions' check and the round trip are in it too, alike for both), and
 * the alternation makes a slower machine slow both alike. Where the server runs on this machine
 * (its backend's /proc entry is readable), the backend's own CPU a record is printed too: the
 * ledger's cost to Postgres, which no service's CPU figure includes.
 *
 * `--shape spread` (the default) writes the benches' multi-tenant records, a few hundred roll-up rows
 * a batch; `--shape live` the live bench's, one workspace, key and model, one roll-up row a batch,
 * with ids that begin with their time as the gateway's do, or random ones with `--random-ids`.
 *
 *   pnpm tsx services/usage/bench/write-batch.ts [--records 200000] [--batch 500] [--shape spread|live] [--random-ids]
 *
 * Uses DATABASE_URL's server (else the local one), in a fresh database dropped after the run.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createPgDb, runMigrations } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createPricer } from "@gw/pricing";
import { createTestDatabase } from "@gw/testkit";
import { toLedgerRow } from "../src/ingest/ledger-row";
import { LedgerWriter } from "../src/ingest/ledger-writer";
import { RecordPartitions } from "../src/partitions";
import { processCpuMicros } from "../../../bench/src/process-cpu";
import { usageMigrations } from "../src/service";
import { benchRecords } from "./records";

const { values: args } = parseArgs({
  options: {
    records: { type: "string", default: "200000" },
    batch: { type: "string", default: "500" },
    shape: { type: "string", default: "spread" },
    "random-ids": { type: "boolean", default: false },
  },
});
const total = Number(args.records);
const size = Number(args.batch);
if (args.shape !== "spread" && args.shape !== "live") throw new Error("--shape is spread or live");
/** The first batches of each kind warm the plan caches and the partitions' first pages. */
const WARM_UP_BATCHES = 20;
const logger = createLogger({ service: "usage-bench", level: "warn" });
const bench = benchRecords(total, Date.now());
const { gateway } = bench;
const randomIds = args["random-ids"];
const recordAt = args.shape === "live" ? (i: number) => bench.liveRecordAt(i, { randomIds }) : bench.recordAt;
const pricer = createPricer(gateway);

const database = await createTestDatabase();
const db = createPgDb({ url: database.url, logger, max: 1 });
try {
  await runMigrations(db, { schema: "usage", dir: usageMigrations, logger });
  const writer = new LedgerWriter(db, new RecordPartitions(db));
  const backendCpu = await backendCpuReader();
  const times = { "fails on a duplicate": [] as number[], "skips duplicates": [] as number[] };
  const cpu = { "fails on a duplicate": [] as number[], "skips duplicates": [] as number[] };
  for (let b = 0; b * size < total; b++) {
    const rows = Array.from({ length: Math.min(size, total - b * size) }, (_, j) => toLedgerRow(recordAt(b * size + j), pricer).row!);
    const statement = b % 2 === 1 ? "skips duplicates" : "fails on a duplicate";
    const cpuBefore = backendCpu?.();
    const t = performance.now();
    const result = await writer.write(rows, { skipDuplicates: statement === "skips duplicates" });
    const ms = performance.now() - t;
    const cpuMs = cpuBefore === undefined ? undefined : backendCpu!() - cpuBefore;
    if (result.inserted.length !== rows.length) throw new Error(`batch ${b}: ${result.inserted.length} of ${rows.length} inserted`);
    if (b >= 2 * WARM_UP_BATCHES) {
      times[statement].push(ms);
      if (cpuMs !== undefined) cpu[statement].push(cpuMs);
    }
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
  const perRecord = (v: number) => ((v * 1000) / size).toFixed(1);
  for (const [statement, ms] of Object.entries(times)) {
    const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
    const backend = cpu[statement as keyof typeof cpu];
    console.log(
      `${statement}: ${ms.length} batches of ${size}, median ${median(ms).toFixed(2)} ms (${perRecord(median(ms))} µs a record), mean ${mean.toFixed(2)} ms` +
        (backend.length > 0 ? `; Postgres's backend CPU ${perRecord(median(backend))} µs a record (median)` : ""),
    );
  }
} finally {
  await db.close();
  await database.drop();
}

/**
 * The milliseconds of CPU the pool's one backend has run, read as the live bench reads a service's
 * (processCpuMicros); undefined where the server is not on this machine or its process is not readable.
 */
async function backendCpuReader(): Promise<(() => number) | undefined> {
  const { rows } = await db.query<{ pid: number }>("select pg_backend_pid() as pid");
  const pid = rows[0]!.pid;
  try {
    // A process of that number here that is not Postgres means the server is elsewhere.
    if (!readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("postgres")) return undefined;
  } catch {
    return undefined;
  }
  return processCpuMicros(pid) === undefined ? undefined : () => (processCpuMicros(pid) ?? Number.NaN) / 1000;
}
