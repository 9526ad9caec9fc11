import { InvalidMessageError, type Bus } from "@gw/bus";
import type { UsageRecord } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics";
import { UsagePublisher } from "./usage-publisher";

const logger = createLogger({ service: "usage-publisher-test", level: "silent" });

function record(i: number): UsageRecord {
  return { request_id: `req_${i}`, started_at: 1, duration_ms: 1, workspace_id: "ws_1", key_id: "key_1", route: "/v1/models", status: 200, stream: false };
}

/** A bus whose enqueue fails while `down` is set, and records what it took. */
function flakyBus() {
  const taken: string[] = [];
  const state = { down: false, calls: 0 };
  const bus = {
    async enqueue(_subject: string, message: UsageRecord, opts: { msgId: string }) {
      state.calls++;
      await new Promise((r) => setImmediate(r));
      if (state.down) throw new Error("nats: disconnected");
      if (message.route === "bad") throw new InvalidMessageError("usage.records", [], "route: bad");
      taken.push(opts.msgId);
    },
  } as unknown as Bus;
  return { bus, taken, state };
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("UsagePublisher", () => {
  it("when the bus takes records, then each is sent once under its request id, and publish itself never waits", async () => {
    const { bus, taken } = flakyBus();
    const publisher = new UsagePublisher({ bus, logger, concurrency: 4 });
    for (let i = 0; i < 100; i++) publisher.publish(record(i));
    expect(taken).toHaveLength(0); // nothing happened on the caller's turn
    await publisher.flush();
    expect(taken.sort()).toEqual(Array.from({ length: 100 }, (_, i) => `req_${i}`).sort());
    expect(publisher.pending).toBe(0);
  });

  it("when the bus refuses for a while, then records wait and all are sent once it is back", async () => {
    const { bus, taken, state } = flakyBus();
    state.down = true;
    const publisher = new UsagePublisher({ bus, logger, maxBackoffMs: 20 });
    for (let i = 0; i < 50; i++) publisher.publish(record(i));
    await until(() => state.calls > 60);
    expect(taken).toHaveLength(0);
    expect(publisher.pending).toBe(50);
    state.down = false;
    await publisher.flush();
    expect(new Set(taken).size).toBe(50);
    expect(taken).toHaveLength(50);
  });

  it("when more records wait than it may hold, then new ones are dropped and counted", async () => {
    const { bus, state } = flakyBus();
    state.down = true;
    const metrics = createMetrics("publisher-test", { defaults: false });
    const publisher = new UsagePublisher({ bus, logger, metrics, maxQueued: 10, concurrency: 1, maxBackoffMs: 10_000 });
    for (let i = 0; i < 25; i++) publisher.publish(record(i));
    const text = await metrics.registry.metrics();
    // One went out (and failed, so it waits again), ten more were queued: fourteen dropped.
    expect(text).toMatch(/gw_usage_records_dropped_total\{[^}]*\} 14/);
    publisher.stop();
  });

  it("when the bus says a record is malformed, then it is dropped, not retried for ever", async () => {
    const { bus, taken, state } = flakyBus();
    const publisher = new UsagePublisher({ bus, logger });
    publisher.publish({ ...record(1), route: "bad" });
    publisher.publish(record(2));
    await publisher.flush();
    expect(taken).toEqual(["req_2"]);
    expect(state.calls).toBe(2);
  });
});
