/**
 * The ceiling the bus sets on ingest: how fast `@gw/bus` delivers a backlog of usage records from
 * JetStream to a handler that does nothing but resolve, on this machine, with the usage service's
 * consume options. Compare with bench/ingest.ts's end-to-end figure.
 *
 *   pnpm tsx services/usage/bench/bus-ceiling.ts [--records 200000] [--in-flight 2000] [--nats nats://127.0.0.1:4222]
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createNatsBus, removeNatsNamespace } from "@gw/bus";
import { MAX_USAGE_BATCH, usageBatchId, usageRecordsOf, usageRowsMessage } from "@gw/contracts";
import { createLogger } from "@gw/logger";

const { values: args } = parseArgs({
  options: {
    records: { type: "string", default: "200000" },
    "in-flight": { type: "string", default: "2000" },
    nats: { type: "string", default: process.env.NATS_URL ?? "nats://127.0.0.1:4222" },
    "publish-to": { type: "string" },
  },
});
const total = Number(args.records);
const logger = createLogger({ service: "usage-bench", level: "warn" });
const secret = "usage-bench-internal-secret-0123456789";

async function publish(namespace: string): Promise<void> {
  const bus = await createNatsBus({ url: args.nats, secret, namespace, logger, name: "usage-bench-publisher" });
  for (let i = 0; i < total; i += 2_000) {
    const chunk = Array.from({ length: Math.min(2_000, total - i) }, (_, j) => {
      const request_id = `req_${i + j}`;
      return {
        request_id,
        started_at: Date.now(),
        duration_ms: 120,
        workspace_id: `ws_${j % 200}`,
        key_id: "key_a",
        route: "/v1/chat/completions",
        model: "gpt-4o",
        status: 200,
        stream: false,
        outcome: { provider: "openai", usage: { input_tokens: 1000, output_tokens: 100 } },
      };
    });
    // As ingress sends them: full batches, one message each.
    const batches = Array.from({ length: Math.ceil(chunk.length / MAX_USAGE_BATCH) }, (_, k) => chunk.slice(k * MAX_USAGE_BATCH, (k + 1) * MAX_USAGE_BATCH));
    await Promise.all(batches.map((records) => bus.enqueue("usage.records", usageRowsMessage(records), { msgId: usageBatchId(records) })));
  }
  await bus.close();
}

async function main(): Promise<void> {
  const namespace = `ceiling${Date.now().toString(36)}`;
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--publish-to", namespace, "--records", String(total)], {
    stdio: "inherit",
  });
  if (child.status !== 0) throw new Error("publishing failed");
  const bus = await createNatsBus({ url: args.nats, secret, namespace, logger, name: "usage-bench" });
  let seen = 0;
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  const started = performance.now();
  const consumer = await bus.consume("usage.records", { durable: "usage", concurrency: Number(args["in-flight"]) }, async (message) => {
    seen += usageRecordsOf(message).length;
    if (seen === total) done();
  });
  await all;
  const seconds = (performance.now() - started) / 1000;
  console.log(`the bus alone delivered ${total} records in ${seconds.toFixed(2)} s: ${Math.round(total / seconds)} records/s`);
  await consumer.stop();
  await bus.close();
  await removeNatsNamespace(args.nats, namespace);
}

if (args["publish-to"]) await publish(args["publish-to"]);
else await main();
