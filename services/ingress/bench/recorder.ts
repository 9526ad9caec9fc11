/**
 * What ingress's usage recording costs its own process, apart from the mesh: the close listener's
 * facts, the records made a batch at a time, their messages' JSON, signature and JetStream publish,
 * and the acknowledgements, at the live bench's pace (blocks of `--block` requests at `--rate`
 * a second, with a pause as long as two blocks between them, as one-in-flight's rotation leaves).
 *
 *   pnpm tsx services/ingress/bench/recorder.ts [--requests 20000] [--rate 500] [--block 100] [--per-message 256] [--nats nats://127.0.0.1:4222]
 *
 * The same paced loop runs twice per round, once recording and once not, alternating over
 * `--rounds`; the difference in the process's CPU (all threads) a request is the figure.
 */
import { parseArgs } from "node:util";
import type { Request, Response } from "express";
import { type Bus, createNatsBus, removeNatsNamespace } from "@gw/bus";
import { createLogger } from "@gw/logger";
import { UsagePublisher } from "@gw/service-kit";
import { usageRecorder } from "../src/usage/usage-recorder";

const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "20000" },
    rate: { type: "string", default: "500" },
    block: { type: "string", default: "100" },
    rounds: { type: "string", default: "3" },
    // nats: published as ingress does; json: each message only serialised (what the bus adds is NATS);
    // none: the records made and dropped (what json adds is the serialising).
    bus: { type: "string", default: "nats" },
    // Records a message at most (the publisher's default, MAX_USAGE_BATCH, when not given).
    "per-message": { type: "string" },
    nats: { type: "string", default: process.env.NATS_URL ?? "nats://127.0.0.1:4222" },
  },
});
const requests = Number(args.requests);
const rate = Number(args.rate);
const block = Number(args.block);
const logger = createLogger({ service: "recorder-bench", level: "warn" });

/** A closed request as the close listener sees it: what usageFactsOf reads, nothing more. */
function closed(i: number): { req: Request; res: Response } {
  const locals = {
    requestId: `req_${i.toString(16).padStart(32, "0")}`,
    identity: { workspace_id: "ws_bench", key_id: `key_${i % 5}` },
    target: "inference",
    json: { model: "gpt-4o-mini", messages: [], stream: false },
    outcomeText: `p=openai&um=gpt-4o-mini-2024-07-18&a=1&uus=${(i % 900) * 1000 + 123}&in=${200 + (i % 3000)}&out=${i % 800}`,
  };
  const res = { locals, writableFinished: true, statusCode: 200, getHeader: () => "application/json" } as unknown as Response;
  return { req: { path: "/v1/chat/completions" } as Request, res };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `requests` closes in paced blocks; returns this process's CPU µs over them (and the publisher's drain). */
async function paced(
  onClose: (req: Request, res: Response, durationMs: number, startedAt: bigint) => void,
  publisher: UsagePublisher | undefined,
  offset: number,
) {
  const perBlockMs = (block / rate) * 1000;
  const before = process.cpuUsage();
  for (let done = 0; done < requests; done += block) {
    const started = performance.now();
    for (let i = 0; i < block; i++) {
      const { req, res } = closed(offset + done + i);
      // The start as the app hands it over (it reads the clock for the duration anyway).
      onClose(req, res, 1.5, process.hrtime.bigint() - 1_500_000n);
      // One request every 1/rate s: the closes spread over the block as they would live.
      if (i % 10 === 9) await sleep(Math.max(0, started + ((i + 1) / block) * perBlockMs - performance.now()));
    }
    await sleep(2 * perBlockMs);
  }
  await publisher?.flush(30_000);
  const cpu = process.cpuUsage(before);
  return cpu.user + cpu.system;
}

async function main(): Promise<void> {
  const namespace = `recbench${Date.now().toString(36)}`;
  const bus = await createNatsBus({ url: args.nats, secret: "recorder-bench-secret-0123456789abcdef", namespace, logger, name: "recorder-bench" });
  const jsonOnly = { enqueue: async (_subject: string, message: unknown) => void JSON.stringify(message) } as unknown as Bus;
  const dropped = { enqueue: async () => undefined } as unknown as Bus;
  const maxBatch = args["per-message"] === undefined ? undefined : Number(args["per-message"]);
  const publisher = new UsagePublisher({ bus: args.bus === "json" ? jsonOnly : args.bus === "none" ? dropped : bus, logger, maxBatch });
  const record = usageRecorder(publisher);
  const none = () => undefined;
  try {
    // Warm-up: both loops' code, and the stream's first messages.
    await paced(record, publisher, 0);
    await paced(none, undefined, 0);
    const deltas: number[] = [];
    for (let round = 0; round < Number(args.rounds); round++) {
      const on = await paced(record, publisher, (round + 1) * requests);
      const off = await paced(none, undefined, 0);
      deltas.push((on - off) / requests);
      console.log(
        `round ${round + 1}: recording ${(on / requests).toFixed(1)}, not ${(off / requests).toFixed(1)} µs a request: +${((on - off) / requests).toFixed(1)}`,
      );
    }
    deltas.sort((a, b) => a - b);
    console.log(`median +${deltas[Math.floor(deltas.length / 2)]?.toFixed(1)} µs a request recorded (${requests} a round at ${rate}/s in blocks of ${block})`);
  } finally {
    publisher.stop();
    await bus.close();
    await removeNatsNamespace(args.nats, namespace);
  }
}

await main();
