/**
 * What receiving usage messages costs the usage service before any ledger work, at the live bench's
 * pace: a message of --per-message live-shape records every --every ms on a fresh namespace's usage
 * stream, published by a child process. One-in-flight sends each mesh 340 to 590 requests a second,
 * by the machine, so ingress's one-second linger makes messages of 340 up to the full 512. The messages are taken by --handler:
 * - "noop": `@gw/bus` with the usage service's consume options  (signature, JSON, the envelope's
 *   check, the pull loop and its acks), and a handler that resolves at once;
 * - "rows": the same, and the rows turned into records (usageRecordsOf), as ingest begins;
 * - "raw": nats.js alone, in the pull loop's shape (fetch what there is room for, ack each).
 * The figure is the process's CPU (all threads) over a second trickle, less its idle CPU over as
 * long, a record; the main thread's wake-ups (voluntary context switches) are printed with it.
 *
 *   node --no-memory-reducer --import tsx services/usage/bench/receipt.ts [--per-message 340] [--every 1000] [--messages 30] [--handler noop|rows|raw]
 *
 * Without --no-memory-reducer, V8's idle-time collection now and then lands in the idle reading
 * (tens of milliseconds), as in trickle.ts.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createNatsBus, removeNatsNamespace } from "@gw/bus";
import { MAX_USAGE_BATCH, usageBatchId, usageRecordsOf, usageRowsMessage } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { processCpuMicros } from "../../../bench/src/process-cpu";
import { CONSUME_CONCURRENCY } from "../src/service";
import { benchSecret as secret } from "./bench-db";
import { benchRecords } from "./records";

const { values: args } = parseArgs({
  options: {
    "per-message": { type: "string", default: "340" },
    every: { type: "string", default: "1000" },
    messages: { type: "string", default: "30" },
    handler: { type: "string", default: "noop" },
    nats: { type: "string", default: process.env.NATS_URL ?? "nats://127.0.0.1:4222" },
    "publish-to": { type: "string" },
    now: { type: "string" },
  },
});
const perMessage = Number(args["per-message"]);
const every = Number(args.every);
const messages = Number(args.messages);
if (!(perMessage >= 1 && perMessage <= MAX_USAGE_BATCH && every > 0 && messages >= 1)) {
  throw new Error(`--per-message must be 1 to ${MAX_USAGE_BATCH}, --every and --messages positive`);
}
if (!["noop", "rows", "raw"].includes(args.handler)) throw new Error("--handler is noop, rows or raw");
const logger = createLogger({ service: "usage-receipt", level: "warn" });
const now = Number(args.now ?? Date.now());
const { liveRecordAt } = benchRecords(perMessage * messages * 2, now);

async function publish(namespace: string): Promise<void> {
  const bus = await createNatsBus({ url: args.nats, secret, namespace, logger, name: "usage-receipt-publisher" });
  const started = performance.now();
  for (let n = 0; n < messages; n++) {
    const wait = started + n * every - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const records = Array.from({ length: perMessage }, (_, j) => liveRecordAt(n * perMessage + j));
    await bus.enqueue("usage.records", usageRowsMessage(records), { msgId: `${usageBatchId(records)}-${process.pid}` });
  }
  await bus.close();
}

/** nats.js alone: the same pull loop's shape (fetch as many as there is room for, ack each), nothing checked or parsed. */
async function rawConsumer(namespace: string, got: () => void): Promise<{ stop(): Promise<void> }> {
  const require = createRequire(fileURLToPath(new URL("../../../packages/bus/package.json", import.meta.url)));
  const nats = (await import(require.resolve("nats"))) as typeof import("nats");
  const nc = await nats.connect({ servers: args.nats });
  const stream = `${namespace.toUpperCase().replace(/[^A-Z0-9_]/g, "_")}_USAGE`;
  const jsm = await nc.jetstreamManager();
  await jsm.consumers.add(stream, { durable_name: "raw", ack_policy: nats.AckPolicy.Explicit, filter_subject: `${namespace}.usage.records` });
  const consumer = await nc.jetstream().consumers.get(stream, "raw");
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const batch = await consumer.fetch({ max_messages: CONSUME_CONCURRENCY, expires: 10_000 });
      for await (const m of batch) {
        m.ack();
        got();
      }
    }
  })();
  return {
    async stop() {
      stopping = true;
      await nc.close();
      await loop.catch(() => undefined);
    },
  };
}

/** The main thread's voluntary context switches: each is a sleep, so each later wake-up is one. */
function wakeUps(): number {
  const line = readFileSync("/proc/thread-self/status", "utf8")
    .split("\n")
    .find((l) => l.startsWith("voluntary_ctxt_switches"));
  return Number(line?.split(/\s+/)[1] ?? 0);
}

/** This process's CPU (all its threads), in ms. */
function cpuMs(): number {
  return (processCpuMicros(process.pid) ?? Number.NaN) / 1000;
}

async function main(): Promise<void> {
  const namespace = `receipt${Date.now().toString(36)}`;
  const bus = await createNatsBus({ url: args.nats, secret, namespace, logger, name: "usage-receipt" });
  let received = 0;
  let rows = 0;
  // Resolved by the message that completes a trickle: no polling in the process measured.
  let target = 0;
  let allIn = (): void => undefined;
  const got = (): void => {
    if (++received === target) allIn();
  };
  const consumer =
    args.handler === "raw"
      ? await rawConsumer(namespace, got)
      : await bus.consume(
          "usage.records",
          // The service's own options (services/usage/src/service.ts), written out there as a literal for deploy/test's permission check.
          { durable: "usage", concurrency: CONSUME_CONCURRENCY, maxDeliver: 10_000, retryDelayMs: 5_000 },
          async (message) => {
            if (args.handler === "rows") rows += usageRecordsOf(message).length;
            got();
          },
        );
  const trickle = async (): Promise<number> => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2), "--publish-to", namespace, "--now", String(now)],
      {
        stdio: "inherit",
      },
    );
    target = received + messages;
    const done = new Promise<void>((resolve) => {
      allIn = resolve;
    });
    const t0 = performance.now();
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    if ((await exited) !== 0) throw new Error("publishing failed");
    await done;
    return performance.now() - t0;
  };
  await trickle(); // warm-up
  const idleWakes = wakeUps();
  const idleFrom = cpuMs();
  const idleSeconds = (messages * every) / 1000;
  await new Promise((r) => setTimeout(r, idleSeconds * 1000));
  const idle = cpuMs() - idleFrom;
  const idleWoke = wakeUps() - idleWakes;
  const busyWakes = wakeUps();
  const busyFrom = cpuMs();
  const ms = await trickle();
  const busy = cpuMs() - busyFrom;
  const busyWoke = wakeUps() - busyWakes;
  const idleThen = (idle * ms) / (idleSeconds * 1000);
  console.log(
    `handler ${args.handler}, ${messages} messages of ${perMessage} every ${every} ms: ${(((busy - idleThen) * 1000) / (messages * perMessage)).toFixed(2)} us a record above idle ` +
      `(busy ${busy.toFixed(0)} ms over ${(ms / 1000).toFixed(1)} s, idle ${idle.toFixed(0)} ms over ${idleSeconds} s; main thread woke ${busyWoke} times busy, ${idleWoke} idle` +
      `${args.handler === "rows" ? `; ${rows} rows read` : ""})`,
  );
  await consumer.stop();
  await bus.close();
  await removeNatsNamespace(args.nats, namespace);
}

if (args["publish-to"]) await publish(args["publish-to"]);
else await main();
