import { InvalidMessageError, PayloadTooLargeError, type Bus } from "@gw/bus";
import { type UsageRecord, type UsageRecords, type UsageRecordRow, usageRecordsOf, usageRowOf } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics";
import { BatchPublisher, type BatchKind, UsagePublisher } from "./batch-publisher";

const logger = createLogger({ service: "usage-publisher-test", level: "silent" });

/** A record as the publisher takes it: a row. */
function record(i: number, route = "/v1/models"): UsageRecordRow {
  return usageRowOf({ request_id: `req_${i}`, started_at: 1, duration_ms: 1, workspace_id: "ws_1", key_id: "key_1", route, status: 200, stream: false });
}

/**
 * A bus whose enqueue fails while `down` is set, refuses a batch holding a record routed "bad" as
 * the real bus's schema check would, and one of more than `maxRecords` records as too large.
 */
function flakyBus(maxRecords = Number.POSITIVE_INFINITY) {
  const messages: { id: string; requests: string[] }[] = [];
  const sent: UsageRecord[] = [];
  const state = { down: false, calls: 0 };
  const bus = {
    async enqueue(_subject: string, message: UsageRecords, opts: { msgId: string }) {
      state.calls++;
      await new Promise((r) => setImmediate(r));
      if (state.down) throw new Error("nats: disconnected");
      const records = usageRecordsOf(message) as UsageRecord[];
      if (records.some((r) => r.route === "bad")) throw new InvalidMessageError("usage.records", [], "route: bad");
      if (records.length > maxRecords) throw new PayloadTooLargeError("usage.records", records.length * 1000, maxRecords * 1000);
      messages.push({ id: opts.msgId, requests: records.map((r) => r.request_id) });
      sent.push(...records);
    },
  } as unknown as Bus;
  const taken = () => messages.flatMap((m) => m.requests);
  return { bus, messages, sent, taken, state };
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `req_${from + i}`);

describe("UsagePublisher", () => {
  it("when records arrive faster than they linger, then full batches go at once, one message each, every record once", async () => {
    const { bus, messages, taken } = flakyBus();
    const publisher = new UsagePublisher({ bus, logger, concurrency: 2, maxBatch: 10, lingerMs: 60_000 });
    for (let i = 0; i < 100; i++) publisher.publish(record(i));
    expect(taken()).toHaveLength(0); // nothing happened on the caller's turn
    // No flush and a linger of a minute: only full batches can have gone.
    await until(() => messages.length === 10);
    expect(taken().sort()).toEqual(ids(100).sort());
    expect(messages.every((m) => m.requests.length === 10)).toBe(true);
    // A batch's message id names its first record and its size, so the same batch sent again is the same message.
    expect(messages.map((m) => m.id)).toContain("req_0+10");
    expect(publisher.pending).toBe(0);
  });

  it("when too few records come to fill a batch, then they go together once the first has lingered", async () => {
    const { bus, messages } = flakyBus();
    const publisher = new UsagePublisher({ bus, logger, lingerMs: 50 });
    for (let i = 0; i < 3; i++) publisher.publish(record(i));
    await new Promise((r) => setTimeout(r, 10));
    expect(messages).toHaveLength(0);
    await until(() => messages.length === 1);
    expect(messages[0]).toEqual({ id: "req_0+3", requests: ids(3) });
    publisher.publish(record(3));
    await until(() => messages.length === 2);
    // A batch of one is sent under the record's own request id.
    expect(messages[1]).toEqual({ id: "req_3", requests: ["req_3"] });
  });

  it("when the bus refuses for a while, then records wait and all are sent once it is back", async () => {
    const { bus, taken, state } = flakyBus();
    state.down = true;
    const publisher = new UsagePublisher({ bus, logger, maxBackoffMs: 20, maxBatch: 8, lingerMs: 1 });
    for (let i = 0; i < 50; i++) publisher.publish(record(i));
    await until(() => state.calls > 30);
    expect(taken()).toHaveLength(0);
    expect(publisher.pending).toBe(50);
    state.down = false;
    await publisher.flush();
    expect(taken().sort()).toEqual(ids(50).sort());
  });

  it("when more records wait than it may hold, then new ones are dropped and counted", async () => {
    const { bus, taken } = flakyBus();
    const metrics = createMetrics("publisher-test", { defaults: false });
    const publisher = new UsagePublisher({ bus, logger, metrics, maxQueued: 10, lingerMs: 60_000 });
    for (let i = 0; i < 25; i++) publisher.publish(record(i));
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/gw_usage_records_dropped_total\{[^}]*\} 15/);
    await publisher.flush();
    expect(taken()).toEqual(ids(10));
    expect(await metrics.registry.metrics()).toMatch(/gw_usage_records_published_total\{[^}]*\} 10/);
  });

  it("when the bus says a batch is malformed, then it is halved until the bad record is alone, which alone is dropped", async () => {
    const { bus, taken } = flakyBus();
    const metrics = createMetrics("publisher-test", { defaults: false });
    const publisher = new UsagePublisher({ bus, logger, metrics });
    for (let i = 0; i < 9; i++) publisher.publish(i === 5 ? record(i, "bad") : record(i));
    await publisher.flush();
    expect(taken().sort()).toEqual(ids(9).filter((id) => id !== "req_5"));
    expect(await metrics.registry.metrics()).toMatch(/gw_usage_records_dropped_total\{[^}]*\} 1\n/);
  });

  it("when a batch is too large for the bus, then its halves are sent instead", async () => {
    const { bus, messages, taken } = flakyBus(3);
    const publisher = new UsagePublisher({ bus, logger });
    for (let i = 0; i < 12; i++) publisher.publish(record(i));
    await publisher.flush();
    expect(taken().sort()).toEqual(ids(12).sort());
    expect(Math.max(...messages.map((m) => m.requests.length))).toBeLessThanOrEqual(3);
  });
});

describe("BatchPublisher with a byte limit", () => {
  it("when items are large, then a batch closes before it passes the limit, each item goes once, in order", async () => {
    const sent: number[][] = [];
    const kind: BatchKind<number> = {
      noun: "sized items",
      metric: "gw_test_sized",
      maxBatch: 10,
      maxBytes: 100,
      bytesOf: (n) => n,
      idOf: (n) => String(n),
      send: async (_bus, batch) => {
        sent.push(batch);
      },
    };
    const publisher = new BatchPublisher({ bus: {} as Bus, logger, lingerMs: 60_000 }, kind);
    const sizes = [40, 40, 40, 90, 150, 10, 10, 10, 30, 60];
    for (const size of sizes) publisher.publish(() => size);
    await publisher.flush();
    expect(sent.flat()).toEqual(sizes);
    // A lone item over the limit goes alone; no batch of several passes it.
    expect(sent).toEqual([[40, 40], [40], [90], [150], [10, 10, 10, 30], [60]]);
  });
});
