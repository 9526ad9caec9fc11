import { afterEach, describe, expect, it } from "vitest";
import type { BroadcastMessage, JobWork, WorkMessage } from "@gw/contracts";
import { createRecordingLogger, deferred, jobWork, sleep, waitFor } from "./bus-testing";
import type { RecordingLogger } from "./bus-testing";
import { BusUsageError, InvalidMessageError, PayloadTooLargeError } from "./messages";
import type { Bus, MessageMeta } from "./types";

/** Returns a new bus that shares no messages, streams or durables with any other call. */
export type MakeBus = (opts: { logger: RecordingLogger }) => Promise<Bus>;

interface Delivery {
  job: JobWork;
  meta: MessageMeta;
}

/**
 * The behaviour every Bus implementation owes its callers. Both the in-process bus and the NATS
 * bus run it, so embedded mode and the mesh cannot drift apart.
 */
export function runBusContract(name: string, makeBus: MakeBus): void {
  describe(`${name} (bus contract)`, { timeout: 90_000 }, () => {
    const open: Bus[] = [];
    let logger: RecordingLogger;

    async function newBus(): Promise<Bus> {
      logger = createRecordingLogger();
      const bus = await makeBus({ logger });
      open.push(bus);
      return bus;
    }

    afterEach(async () => {
      await Promise.all(open.splice(0).map((b) => b.close()));
    });

    const identity: BroadcastMessage<"identity.changed"> = { kind: "key", id: "key_1", at: 1 };

    it("when a broadcast is published, then every subscriber receives it with its headers", async () => {
      const bus = await newBus();
      const seen: { who: string; message: unknown; meta: MessageMeta }[] = [];
      bus.subscribe("identity.changed", (message, meta) => void seen.push({ who: "a", message, meta }));
      bus.subscribe("identity.changed", async (message, meta) => void seen.push({ who: "b", message, meta }));
      await bus.publish("identity.changed", identity, { "X-Request-Id": "req_1", traceparent: "00-abc-def-01" });
      await waitFor(() => seen.length === 2, "both subscribers");
      expect(seen.map((s) => s.who).sort()).toEqual(["a", "b"]);
      for (const s of seen) {
        expect(s.message).toEqual(identity);
        expect(s.meta).toEqual({
          subject: "identity.changed",
          headers: { "x-request-id": "req_1", traceparent: "00-abc-def-01" },
          redelivered: false,
          deliveryCount: 1,
        });
      }
    });

    it("when a work message is larger than the bus carries, then enqueue refuses it and nothing is delivered", async () => {
      const bus = await newBus();
      expect(bus.maxPayloadBytes).toBeGreaterThanOrEqual(1024 * 1024);
      const got: JobWork[] = [];
      await bus.consume("jobs.work.tools", { durable: "big" }, async (job) => void got.push(job));
      const big = jobWork("big", { request: { format: "json", body: { input: "x".repeat(bus.maxPayloadBytes) } } });
      const refused = await bus.enqueue("jobs.work.tools", big, { msgId: "big" }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(PayloadTooLargeError);
      expect((refused as PayloadTooLargeError).maxBytes).toBe(bus.maxPayloadBytes);
      const fits = jobWork("fits", { request: { format: "json", body: { input: "x".repeat(bus.maxPayloadBytes / 2) } } });
      await bus.enqueue("jobs.work.tools", fits, { msgId: "fits" });
      await waitFor(() => got.length === 1, "the message that fits");
      expect(got[0]?.job_id).toBe("job_fits");
    });

    it("when a caller sets the signature header, then publish and enqueue refuse it, as on both buses", async () => {
      const bus = await newBus();
      await expect(bus.publish("identity.changed", identity, { "Gw-Signature": "x" })).rejects.toThrow(BusUsageError);
      await expect(bus.enqueue("jobs.work.tools", jobWork("h"), { msgId: "h", headers: { "gw-signature": "x" } })).rejects.toThrow(BusUsageError);
    });

    it("when a subscriber unsubscribes, then it receives no further broadcasts", async () => {
      const bus = await newBus();
      let gone = 0;
      let stays = 0;
      const unsubscribe = bus.subscribe("identity.changed", () => void gone++);
      bus.subscribe("identity.changed", () => void stays++);
      unsubscribe();
      await bus.publish("identity.changed", identity);
      await bus.publish("identity.changed", { ...identity, at: 2 });
      // Broadcasts are delivered in order, so once the remaining subscriber has both, the
      // unsubscribed one would have had them too.
      await waitFor(() => stays === 2, "the remaining subscriber");
      expect(gone).toBe(0);
    });

    it("when a broadcast handler throws, then it is logged and later broadcasts still arrive", async () => {
      const bus = await newBus();
      const ats: number[] = [];
      bus.subscribe("identity.changed", (m) => {
        ats.push(m.at);
        if (m.at === 1) throw new Error("boom");
      });
      await bus.publish("identity.changed", identity);
      await bus.publish("identity.changed", { ...identity, at: 2 });
      await waitFor(() => ats.length === 2, "both broadcasts");
      await waitFor(() => logger.has("error", "broadcast handler failed"), "the error log");
    });

    it("when work is enqueued before and after a consumer starts, then each message is handled exactly once", async () => {
      const bus = await newBus();
      const got: Delivery[] = [];
      await bus.enqueue("jobs.work.inference", jobWork("a"), { msgId: "a", headers: { "x-request-id": "req_a" } });
      await bus.enqueue("jobs.work.inference", jobWork("b"), { msgId: "b" });
      await bus.consume("jobs.work.inference", { durable: "inference", ackWaitMs: 1000 }, async (job, meta) => {
        got.push({ job, meta });
      });
      await bus.enqueue("jobs.work.inference", jobWork("c"), { msgId: "c", headers: { traceparent: "00-t-s-01" } });
      await waitFor(() => got.length === 3, "three deliveries");
      // Longer than two ack waits: an unacked message would have come back by now.
      await sleep(2_500);
      expect(got.map((d) => d.job.job_id)).toEqual(["job_a", "job_b", "job_c"]);
      expect(got[0]?.job).toEqual(jobWork("a"));
      expect(got.map((d) => d.meta)).toEqual([
        { subject: "jobs.work.inference", headers: { "x-request-id": "req_a" }, redelivered: false, deliveryCount: 1 },
        { subject: "jobs.work.inference", headers: {}, redelivered: false, deliveryCount: 1 },
        { subject: "jobs.work.inference", headers: { traceparent: "00-t-s-01" }, redelivered: false, deliveryCount: 1 },
      ]);
    });

    it("when a handler throws, then the message is redelivered with redelivered=true and deliveryCount 2", async () => {
      const bus = await newBus();
      const got: Delivery[] = [];
      await bus.consume("jobs.work.tools", { durable: "tools", retryDelayMs: 100 }, async (job, meta) => {
        got.push({ job, meta });
        if (meta.deliveryCount === 1) throw new Error("transient");
      });
      await bus.enqueue("jobs.work.tools", jobWork("r"), { msgId: "r", headers: { "x-request-id": "req_r" } });
      await waitFor(() => got.length === 2, "the redelivery");
      expect(got.map((d) => d.meta)).toEqual([
        { subject: "jobs.work.tools", headers: { "x-request-id": "req_r" }, redelivered: false, deliveryCount: 1 },
        { subject: "jobs.work.tools", headers: { "x-request-id": "req_r" }, redelivered: true, deliveryCount: 2 },
      ]);
      expect(got[1]?.job).toEqual(jobWork("r"));
      expect(logger.has("warn", "will redeliver")).toBe(true);
    });

    it("when the same msgId is enqueued twice, then the message is delivered once", async () => {
      const bus = await newBus();
      const ids: string[] = [];
      await bus.enqueue("jobs.work.tools", jobWork("d1"), { msgId: "same" });
      await bus.enqueue("jobs.work.tools", jobWork("d2"), { msgId: "same" });
      await bus.enqueue("jobs.work.tools", jobWork("sentinel"), { msgId: "other" });
      await bus.consume("jobs.work.tools", { durable: "tools" }, async (job) => void ids.push(job.job_id));
      // One consumer with concurrency 1 gets messages in order: the sentinel comes last.
      await waitFor(() => ids.includes("job_sentinel"), "the sentinel");
      expect(ids).toEqual(["job_d1", "job_sentinel"]);
    });

    it("when the same msgId is used on two work subjects, then both messages are delivered", async () => {
      const bus = await newBus();
      const seen: string[] = [];
      await bus.enqueue("jobs.work.tools", jobWork("x"), { msgId: "job_x" });
      const event: WorkMessage<"jobs.events"> = { job_id: "job_x", status: "completed", attempt: 1, at: 5 };
      await bus.enqueue("jobs.events", event, { msgId: "job_x" });
      await bus.consume("jobs.work.tools", { durable: "tools" }, async (m) => void seen.push(`work:${m.job_id}`));
      await bus.consume("jobs.events", { durable: "jobs" }, async (m) => void seen.push(`event:${m.status}`));
      await waitFor(() => seen.length === 2, "both messages");
      expect(seen.sort()).toEqual(["event:completed", "work:job_x"]);
    });

    it("when a handler keeps failing, then delivery stops after maxDeliver and the failure is logged", async () => {
      const bus = await newBus();
      const attempts: number[] = [];
      const done: string[] = [];
      await bus.consume("jobs.work.inference", { durable: "inference", maxDeliver: 3, retryDelayMs: 100, ackWaitMs: 60_000 }, async (job, meta) => {
        if (job.job_id !== "job_poison") return void done.push(job.job_id);
        attempts.push(meta.deliveryCount);
        throw new Error("always");
      });
      await bus.enqueue("jobs.work.inference", jobWork("poison"), { msgId: "poison" });
      await waitFor(() => logger.has("error", "giving up"), "the give-up log");
      await sleep(1_500); // fifteen retry delays: a fourth delivery would have come
      expect(attempts).toEqual([1, 2, 3]);
      await bus.enqueue("jobs.work.inference", jobWork("after"), { msgId: "after" });
      await waitFor(() => done.includes("job_after"), "work after the poison message");
    });

    it("when a payload does not match its schema, then publish and enqueue reject and nothing is sent", async () => {
      const bus = await newBus();
      const broadcasts: unknown[] = [];
      const work: string[] = [];
      bus.subscribe("identity.changed", (m) => void broadcasts.push(m));
      await bus.consume("jobs.work.tools", { durable: "tools" }, async (m) => void work.push(m.job_id));
      const badIdentity = { kind: "nope", id: "", at: 1 } as unknown as BroadcastMessage<"identity.changed">;
      await expect(bus.publish("identity.changed", badIdentity)).rejects.toThrow(InvalidMessageError);
      await expect(bus.publish("identity.changed", badIdentity)).rejects.toThrow(/identity\.changed.*kind/s);
      const badJob = { ...jobWork("bad"), job_id: "nope" };
      await expect(bus.enqueue("jobs.work.tools", badJob, { msgId: "bad" })).rejects.toThrow(/jobs\.work\.tools.*job_id/s);
      const unknownSubject = "jobs.nope" as unknown as "jobs.work.tools";
      await expect(bus.enqueue(unknownSubject, jobWork("u"), { msgId: "u" })).rejects.toThrow(BusUsageError);
      await expect(bus.enqueue("jobs.work.tools", jobWork("m"), { msgId: "" })).rejects.toThrow(BusUsageError);
      await bus.publish("identity.changed", identity);
      await bus.enqueue("jobs.work.tools", jobWork("good"), { msgId: "good" });
      await waitFor(() => broadcasts.length === 1 && work.length === 1, "the valid messages");
      expect(broadcasts).toEqual([identity]);
      expect(work).toEqual(["job_good"]);
    });

    it("when concurrency is 3, then at most 3 handlers run at once and all work is done", async () => {
      const bus = await newBus();
      let running = 0;
      let maxRunning = 0;
      let finished = 0;
      for (let i = 0; i < 9; i++) await bus.enqueue("jobs.work.inference", jobWork(`c${i}`), { msgId: `c${i}` });
      await bus.consume("jobs.work.inference", { durable: "inference", concurrency: 3 }, async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        // Hold the slot until the others are taken too, so a missing bound would show as > 3.
        await waitFor(() => running >= 3 || finished >= 7, "peers", 5_000).catch(() => undefined);
        await sleep(20);
        running--;
        finished++;
      });
      await waitFor(() => finished === 9, "all nine handlers");
      expect(maxRunning).toBe(3);
    });

    it("when two consumers share a durable, then each message is handled once and both do work", async () => {
      const bus = await newBus();
      const handledBy = new Map<string, string[]>([
        ["a", []],
        ["b", []],
      ]);
      const count = (who: string) => handledBy.get(who)?.length ?? 0;
      const handler = (me: string, other: string) => async (job: JobWork) => {
        handledBy.get(me)?.push(job.job_id);
        // The first message waits for the other consumer to get one: with concurrency 1 the
        // only way on is for the second consumer to take work, which is what is under test.
        if (count(me) === 1) await waitFor(() => count(other) > 0, `consumer ${other} to take work`);
      };
      await bus.consume("jobs.work.tools", { durable: "tools" }, handler("a", "b"));
      await bus.consume("jobs.work.tools", { durable: "tools" }, handler("b", "a"));
      for (let i = 0; i < 8; i++) await bus.enqueue("jobs.work.tools", jobWork(`s${i}`), { msgId: `s${i}` });
      await waitFor(() => count("a") + count("b") === 8, "eight deliveries");
      await sleep(500);
      const all = [...(handledBy.get("a") ?? []), ...(handledBy.get("b") ?? [])].sort();
      expect(all).toEqual(Array.from({ length: 8 }, (_, i) => `job_s${i}`).sort());
      expect(count("a")).toBeGreaterThan(0);
      expect(count("b")).toBeGreaterThan(0);
    });

    it("when a second durable consumes the same work subject, then consume rejects", async () => {
      const bus = await newBus();
      await bus.consume("jobs.events", { durable: "jobs" }, async () => undefined);
      await expect(bus.consume("jobs.events", { durable: "other" }, async () => undefined)).rejects.toThrow(BusUsageError);
    });

    it("when a consumer is stopped, then new work waits for the next consumer of the durable", async () => {
      const bus = await newBus();
      const first: string[] = [];
      const second: string[] = [];
      const c1 = await bus.consume("jobs.events", { durable: "jobs" }, async (m) => void first.push(m.status));
      await c1.stop();
      await bus.enqueue("jobs.events", { job_id: "job_1", status: "processing", attempt: 1, at: 1 }, { msgId: "e1" });
      await sleep(300);
      await bus.consume("jobs.events", { durable: "jobs" }, async (m) => void second.push(m.status));
      await waitFor(() => second.length === 1, "the second consumer");
      expect(first).toEqual([]);
      expect(second).toEqual(["processing"]);
    });

    it("when a handler runs longer than ackWaitMs, then the message is not redelivered meanwhile", async () => {
      const bus = await newBus();
      const deliveries: number[] = [];
      await bus.consume("jobs.work.inference", { durable: "inference", ackWaitMs: 1000 }, async (_job, meta) => {
        deliveries.push(meta.deliveryCount);
        await sleep(3_000);
      });
      await bus.enqueue("jobs.work.inference", jobWork("slow"), { msgId: "slow" });
      await waitFor(() => deliveries.length === 1, "the delivery");
      await sleep(4_500);
      expect(deliveries).toEqual([1]);
    });

    it("when close() is called during a handler, then it waits for the handler and the bus refuses later calls", async () => {
      const bus = await newBus();
      expect(await bus.ping()).toBe(true);
      const release = deferred();
      let started = false;
      let finished = false;
      await bus.consume("jobs.work.tools", { durable: "tools" }, async () => {
        started = true;
        await release.promise;
        finished = true;
      });
      await bus.enqueue("jobs.work.tools", jobWork("held"), { msgId: "held" });
      await waitFor(() => started, "the handler to start");
      let closed = false;
      const closing = bus.close().then(() => {
        closed = true;
      });
      await sleep(300);
      expect(closed).toBe(false);
      release.resolve();
      await closing;
      expect(finished).toBe(true);
      expect(await bus.ping()).toBe(false);
      await expect(bus.publish("identity.changed", identity)).rejects.toThrow(BusUsageError);
      await expect(bus.enqueue("jobs.work.tools", jobWork("late"), { msgId: "late" })).rejects.toThrow(BusUsageError);
      await expect(bus.close()).resolves.toBeUndefined();
    });
  });
}
