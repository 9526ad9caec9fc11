import { describe, expect, it } from "vitest";
import { runBusContract } from "./bus-contract";
import { createRecordingLogger, jobWork, sleep, waitFor } from "./bus-testing";
import { createInProcessBus } from "./in-process-bus";
import type { MessageMeta } from "./types";

runBusContract("in-process bus", async ({ logger }) => createInProcessBus({ logger }));

describe("in-process bus", () => {
  it("when a broadcast is published, then handlers run after the publisher's call returns", async () => {
    const bus = createInProcessBus({ logger: createRecordingLogger() });
    let called = false;
    bus.subscribe("identity.changed", () => {
      called = true;
    });
    const publishing = bus.publish("identity.changed", { kind: "workspace", id: "ws_1", at: 1 });
    expect(called).toBe(false);
    await publishing;
    await waitFor(() => called, "the handler");
    await bus.close();
  });

  it("when a handler mutates its message, then neither the sender nor other subscribers see it", async () => {
    const bus = createInProcessBus({ logger: createRecordingLogger() });
    const sent = { kind: "key" as const, id: "key_1", at: 1 };
    const seen: string[] = [];
    bus.subscribe("identity.changed", (m) => {
      m.id = "mutated";
    });
    bus.subscribe("identity.changed", async (m) => {
      await sleep(10);
      seen.push(m.id);
    });
    await bus.publish("identity.changed", sent);
    await waitFor(() => seen.length === 1, "the second subscriber");
    expect(seen).toEqual(["key_1"]);
    expect(sent.id).toBe("key_1");
    await bus.close();
  });

  it("when a work message holds values JSON cannot carry, then the handler sees them as the wire would", async () => {
    const bus = createInProcessBus({ logger: createRecordingLogger() });
    const at = new Date("2025-01-01T00:00:00Z");
    const got: unknown[] = [];
    await bus.consume("jobs.work.tools", { durable: "tools" }, async (m) => void got.push(m.request.format === "json" ? m.request.body : undefined));
    await bus.enqueue("jobs.work.tools", jobWork("w", { request: { format: "json", body: { at, skip: undefined } } }), { msgId: "w" });
    await waitFor(() => got.length === 1, "the delivery");
    expect(got[0]).toEqual({ at: "2025-01-01T00:00:00.000Z" });
    await bus.close();
  });

  it("when the dedupe window has passed, then the same msgId is delivered again", async () => {
    const bus = createInProcessBus({ logger: createRecordingLogger(), dedupeWindowMs: 50 });
    const metas: MessageMeta[] = [];
    await bus.consume("jobs.work.tools", { durable: "tools" }, async (_m, meta) => void metas.push(meta));
    await bus.enqueue("jobs.work.tools", jobWork("1"), { msgId: "one" });
    await waitFor(() => metas.length === 1, "the first delivery");
    await sleep(100);
    await bus.enqueue("jobs.work.tools", jobWork("1"), { msgId: "one" });
    await waitFor(() => metas.length === 2, "the second delivery");
    await bus.close();
  });

  it("when consume options are invalid, then consume rejects before taking work", async () => {
    const bus = createInProcessBus({ logger: createRecordingLogger() });
    await expect(bus.consume("jobs.events", { durable: "has.dot" }, async () => undefined)).rejects.toThrow(/durable/);
    await expect(bus.consume("jobs.events", { durable: "ok", concurrency: 0 }, async () => undefined)).rejects.toThrow(/concurrency/);
    await bus.close();
  });
});
