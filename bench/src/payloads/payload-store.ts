/**
 * Where a job's large request or result travels out of band, measured: a 20 MB payload written and
 * read back through JetStream's object store against a Postgres bytea row, on the local services.
 * `pnpm exec tsx bench/src/payloads/payload-store.ts`; figures in bench/README.md.
 */
import { randomBytes } from "node:crypto";
import { connect, StorageType } from "nats";
import pg from "pg";

const SIZE = 20 * 1024 * 1024;
const ROUNDS = 8;
const payload = randomBytes(SIZE);

function stats(name: string, ms: number[]): void {
  const sorted = [...ms].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  console.log(
    `${name.padEnd(34)} median ${median.toFixed(1)} ms  (${sorted.map((m) => m.toFixed(0)).join(", ")})  ${((SIZE / 1e6 / median) * 1000).toFixed(0)} MB/s`,
  );
}

async function time(fn: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

async function natsObjectStore(): Promise<void> {
  const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
  const os = await nc.jetstream().views.os(`bench_payloads_${process.pid}`, { storage: StorageType.File });
  const put: number[] = [];
  const get: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    put.push(await time(async () => void (await os.putBlob({ name: `p${i}` }, payload))));
    get.push(
      await time(async () => {
        const blob = await os.getBlob(`p${i}`);
        if (blob?.length !== SIZE) throw new Error("short read");
      }),
    );
  }
  await os.destroy();
  await nc.close();
  stats("JetStream object store: put", put);
  stats("JetStream object store: get", get);
}

async function postgres(): Promise<void> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test" });
  await client.connect();
  await client.query("CREATE TEMP TABLE payloads (id int PRIMARY KEY, data bytea)");
  const put: number[] = [];
  const get: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    put.push(await time(async () => void (await client.query("INSERT INTO payloads VALUES ($1, $2)", [i, payload]))));
    get.push(
      await time(async () => {
        const { rows } = await client.query<{ data: Buffer }>("SELECT data FROM payloads WHERE id = $1", [i]);
        if (rows[0]?.data.length !== SIZE) throw new Error("short read");
      }),
    );
  }
  await client.end();
  stats("Postgres bytea: insert", put);
  stats("Postgres bytea: select", get);
}

await natsObjectStore();
await postgres();
