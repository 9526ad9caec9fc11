import { afterEach, describe, expect, it, vi } from "vitest";
import { type Bus, createInProcessBus } from "@gw/bus";
import type { JobEvent, JobWork } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { reportJobEvent } from "./job-events";

const work = (route: string): JobWork => ({
  job_id: "job_1",
  route,
  identity: { workspace_id: "ws", key_id: "key", plan: "pro", models: [["*"]], tools: [] },
  request: { format: "json", body: {} },
  attempt: 2,
});

async function eventsOf(maxPayloadBytes: number, report: (bus: ReturnType<typeof createInProcessBus>) => Promise<void>): Promise<JobEvent[]> {
  const bus = createInProcessBus({ logger: createLogger({ service: "t", level: "silent" }), maxPayloadBytes });
  const seen: JobEvent[] = [];
  await bus.consume("jobs.events", { durable: "jobs" }, async (event) => void seen.push(event));
  await report(bus);
  await new Promise((r) => setTimeout(r, 50));
  await bus.close();
  return seen;
}

describe("when a worker reports a job's events", () => {
  it("then a repeated report of the same status or finish on one attempt is one event", async () => {
    const seen = await eventsOf(1 << 20, async (bus) => {
      await reportJobEvent(bus, work("embeddings"), "processing");
      await reportJobEvent(bus, work("embeddings"), "processing");
      await reportJobEvent(bus, work("embeddings"), "completed", { result: { a: 1 } });
      await reportJobEvent(bus, work("embeddings"), "failed", { error: {} });
    });
    expect(seen.map((e) => [e.status, e.attempt])).toEqual([
      ["processing", 2],
      ["completed", 2],
    ]);
  });

  it("then a result too large for the bus becomes a failure that says so, in the route's envelope", async () => {
    const [openai] = await eventsOf(4096, (bus) => reportJobEvent(bus, work("images/generations"), "completed", { result: { b64: "x".repeat(10_000) } }));
    expect(openai).toMatchObject({ status: "failed", error: { error: { code: "body_too_large", message: expect.stringContaining("regular route") } } });
    const [anthropic] = await eventsOf(4096, (bus) => reportJobEvent(bus, work("messages"), "completed", { result: { text: "x".repeat(10_000) } }));
    expect(anthropic).toMatchObject({ status: "failed", error: { type: "error", error: { type: "request_too_large" } } });
  });

  it("then a result too large for the bus is handed to the store first, and the event names it instead of carrying it", async () => {
    const result = { b64: "y".repeat(10_000) };
    const stored: string[] = [];
    const [event] = await eventsOf(4096, (bus) =>
      reportJobEvent(bus, work("images/generations"), "completed", { result, usage_tokens: 12, status_code: 200 }, async (json) => void stored.push(json)),
    );
    expect(stored).toEqual([JSON.stringify(result)]);
    expect(event).toMatchObject({ status: "completed", attempt: 2, usage_tokens: 12, result_stored: { bytes: JSON.stringify(result).length } });
    expect(event).not.toHaveProperty("result");
    // A small result still travels in the event, and the store is not asked.
    const [small] = await eventsOf(4096, (bus) =>
      reportJobEvent(bus, work("embeddings"), "completed", { result: { ok: 1 } }, async () => expect.fail("not stored")),
    );
    expect(small).toMatchObject({ result: { ok: 1 } });
  });

  it("then a running status too large is not turned into a failure: the caller sees the error", async () => {
    const bus = createInProcessBus({ logger: createLogger({ service: "t", level: "silent" }), maxPayloadBytes: 1024 });
    await expect(reportJobEvent(bus, work("embeddings"), "processing", { upstream_id: "x".repeat(2000) })).rejects.toThrow(/at most 1024/);
    await bus.close();
  });

  describe("while the bus fails (a NATS server restarting)", () => {
    afterEach(() => vi.useRealTimers());
    /** The bus, failing its first `failures` enqueues as a timed-out publish does; the ids of every try. */
    const failing = (bus: Bus, failures: number) => {
      const tries: string[] = [];
      const flaky = Object.assign(Object.create(bus) as Bus, {
        enqueue: (subject: Parameters<Bus["enqueue"]>[0], message: Parameters<Bus["enqueue"]>[1], opts: Parameters<Bus["enqueue"]>[2]) => {
          tries.push(opts.msgId);
          return tries.length <= failures ? Promise.reject(new Error("TIMEOUT")) : bus.enqueue(subject, message, opts);
        },
      });
      return { flaky, tries };
    };

    it("then a finish is sent again under its one message id until the bus takes it, and arrives once", async () => {
      let tries: string[] = [];
      const seen = await eventsOf(1 << 20, async (bus) => {
        const f = failing(bus, 2);
        tries = f.tries;
        await reportJobEvent(f.flaky, work("embeddings"), "completed", { result: { a: 1 } });
      });
      expect(tries).toEqual(["job_1:2:final", "job_1:2:final", "job_1:2:final"]);
      expect(seen.map((e) => [e.status, e.result])).toEqual([["completed", { a: 1 }]]);
    });

    it("then a finish the bus keeps refusing fails after some seconds, and a running status or a closed bus at once", async () => {
      vi.useFakeTimers();
      const bus = createInProcessBus({ logger: createLogger({ service: "t", level: "silent" }) });
      const always = failing(bus, Number.POSITIVE_INFINITY);
      const finish = reportJobEvent(always.flaky, work("embeddings"), "failed", { error: {} });
      const settled = expect(finish).rejects.toThrow("TIMEOUT");
      await vi.advanceTimersByTimeAsync(2_000);
      expect(always.tries.length).toBeGreaterThan(2);
      const before = always.tries.length;
      await vi.advanceTimersByTimeAsync(10_000);
      await settled;
      expect(always.tries.length).toBeGreaterThan(before);

      const running = failing(bus, Number.POSITIVE_INFINITY);
      await expect(reportJobEvent(running.flaky, work("embeddings"), "processing")).rejects.toThrow("TIMEOUT");
      expect(running.tries).toHaveLength(1);

      await bus.close();
      const closed = failing(bus, 0);
      await expect(reportJobEvent(closed.flaky, work("embeddings"), "completed", { result: {} })).rejects.toThrow(/closed/);
      expect(closed.tries).toHaveLength(1);
    });
  });
});
