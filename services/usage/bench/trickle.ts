/**
 * The usage service's CPU a record at a light, steady load, as the live bench's one-in-flight
 * scenario feeds it (a few hundred records a second, a message now and then), where per-message and
 * per-batch costs weigh more than in a backlog's drain (ingest.ts).
 *
 *   pnpm tsx services/usage/bench/trickle.ts [--rate 200] [--seconds 20] [--per-message 256] [--wait 250]
 *
 * A child process publishes `--rate` records a second on a fresh namespace's usage stream, in
 * messages of `--per-message` (at most MAX_USAGE_BATCH), while the service consumes them with its
 * batch wait at `--wait` ms. A first trickle warms the service's code, as the live bench's warm-up
 * does; then its process CPU (all threads) is read for `--seconds` idle and over a second trickle,
 * and the difference a record is the figure. Run it under `node --no-memory-reducer --min-semi-space-size=16 --import tsx`
 * to keep V8's idle-time collections (tens of milliseconds at random) out of the idle reading, and for
 * 40 s or more to read a steady state: after a warm-up of 3,000 records V8 is still optimising the
 * service's code, and the figure reads about twice what it does after 10,000 (bench/README.md).
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createNatsBus, removeNatsNamespace } from "@gw/bus";
import { MAX_USAGE_BATCH, usageBatchId, usageRowsMessage } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { benchDatabase, benchSecret as secret, benchUsageService } from "./bench-db";
import { benchRecords } from "./records";

const { values: args } = parseArgs({
  options: {
    rate: { type: "string", default: "200" },
    seconds: { type: "string", default: "20" },
    "per-message": { type: "string", default: String(MAX_USAGE_BATCH) },
    wait: { type: "string", default: "250" },
    database: { type: "string", default: process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/postgres" },
    nats: { type: "string", default: process.env.NATS_URL ?? "nats://127.0.0.1:4222" },
    "publish-to": { type: "string" },
    from: { type: "string", default: "0" },
    now: { type: "string" },
  },
});
const rate = Number(args.rate);
const seconds = Number(args.seconds);
const perMessage = Number(args["per-message"]);
const total = Math.round(rate * seconds);
if (!(rate > 0 && seconds > 0 && perMessage >= 1 && perMessage <= MAX_USAGE_BATCH)) {
  throw new Error(`--rate and --seconds must be positive, --per-message from 1 to ${MAX_USAGE_BATCH}`);
}
const logger = createLogger({ service: "usage-trickle", level: "warn" });
const now = Number(args.now ?? Date.now());
// Two trickles of `total`: the first warms the service's code (as the live bench's warm-up does), the second is measured.
const { gateway, recordAt } = benchRecords(2 * total, now);

/** The child: a message of `perMessage` records every perMessage/rate seconds, on a steady clock. */
async function publish(namespace: string): Promise<void> {
  const bus = await createNatsBus({ url: args.nats, secret, namespace, logger, name: "usage-trickle-publisher" });
  const every = (perMessage / rate) * 1000;
  const started = performance.now();
  const from = Number(args.from);
  for (let i = 0, n = 0; i < total; i += perMessage, n++) {
    const wait = started + n * every - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const records = Array.from({ length: Math.min(perMessage, total - i) }, (_, j) => recordAt(from + i + j));
    await bus.enqueue("usage.records", usageRowsMessage(records), { msgId: usageBatchId(records) });
  }
  await bus.close();
}

/** µs of CPU of the main thread (JavaScript) and of the others (V8's helpers, libuv), from /proc. */
function threadsUs(): { main: number; others: number } {
  const out = { main: 0, others: 0 };
  for (const t of readdirSync("/proc/self/task")) {
    const ns = Number(readFileSync(`/proc/self/task/${t}/schedstat`, "utf8").split(" ")[0]);
    if (Number(t) === process.pid) out.main += ns / 1000;
    else out.others += ns / 1000;
  }
  return out;
}

function cpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

async function main(): Promise<void> {
  const { db, drop } = await benchDatabase(args.database, "gw_usage_trickle", "gw-usage-trickle");
  const namespace = `trickle${Date.now().toString(36)}`;
  const bus = await createNatsBus({ url: args.nats, secret, namespace, logger, name: "usage-trickle" });
  const service = benchUsageService({
    gateway,
    bus,
    db,
    logger,
    batch: { maxWaitMs: Number(args.wait) },
  });
  try {
    const { url: serviceUrl } = await service.start();
    const ingested = async () => {
      const text = await (await fetch(`${serviceUrl}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith("gw_usage_records_ingested_total"));
      return line ? Number(line.split(" ").pop()) : 0;
    };
    const trickle = async (from: number): Promise<void> => {
      const child = spawn(
        process.execPath,
        [
          ...process.execArgv,
          fileURLToPath(import.meta.url),
          ...process.argv.slice(2),
          "--publish-to",
          namespace,
          "--now",
          String(now),
          "--from",
          String(from),
        ],
        { stdio: "inherit" },
      );
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      // No polling while the child publishes: a scrape of the service's metrics costs it more than a batch.
      if ((await exited) !== 0) throw new Error("publishing failed");
      while ((await ingested()) < from + total) await new Promise((r) => setTimeout(r, 50));
    };
    await trickle(0);
    let before = cpuUs();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const idle = cpuUs() - before;
    before = cpuUs();
    const busyFrom = performance.now();
    const threadsBefore = threadsUs();
    await trickle(total);
    const busy = cpuUs() - before;
    const threadsAfter = threadsUs();
    // Idle CPU over the busy window's own length (it runs past `seconds` by the child's start and the last batch's wait).
    const idleThen = (idle * (performance.now() - busyFrom)) / (seconds * 1000);
    console.log(
      `${total} records at ${rate}/s, ${perMessage} a message, batch wait ${args.wait} ms: ` +
        `${((busy - idleThen) / total).toFixed(1)} us a record above idle (busy ${(busy / 1000).toFixed(0)} ms: main thread ` +
        `${((threadsAfter.main - threadsBefore.main) / 1000).toFixed(0)}, others ${((threadsAfter.others - threadsBefore.others) / 1000).toFixed(0)}; ` +
        `idle ${(idle / 1000).toFixed(0)} ms over ${seconds} s)`,
    );
  } finally {
    await service.stop();
    await bus.close();
    await drop();
    await removeNatsNamespace(args.nats, namespace);
  }
}

if (args["publish-to"]) await publish(args["publish-to"]);
else await main();
