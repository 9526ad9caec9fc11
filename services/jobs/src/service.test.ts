import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import { settlementsOf, type JobWork, type TokenSettlement } from "@gw/contracts";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { JobStore } from "./job-store";
import { testJobsService } from "./testing/jobs-service";

/** The jobs service over a bus that keeps nothing (the embedded default's), across a restart. */
const logger = createLogger({ service: "jobs-test", level: "silent" });
const timings = { attemptTimeoutMs: 60_000, maxAttempts: 3, retentionMs: 3_600_000, sweepIntervalMs: 100 };
let db: Db;

beforeAll(async () => {
  db = await createPgliteDb();
});
afterAll(() => db?.close());

const start = async () => {
  const bus = createInProcessBus({ logger });
  const service = testJobsService({ db, bus, internalSecret: "s".repeat(32), timings });
  await service.start();
  return { bus, service };
};

describe("when the embedded default restarts with jobs whose work was only in memory", () => {
  it("then every unfinished job is published again, and finished ones are not", async () => {
    const first = await start();
    const store = new JobStore(db, timings.attemptTimeoutMs, timings.retentionMs);
    const identity = { workspace_id: "ws", key_id: "key", plan: "pro" as const, models: [["*"]], tools: [] };
    const make = async (n: number) => {
      const outcome = await store.create({
        id: `job_${String(n).padStart(32, "0")}`,
        route: "embeddings",
        identity,
        request: { format: "json", body: { model: "m", input: "x" } },
        requestHash: "h",
      });
      await store.markDispatched(outcome.job.id, 1);
      return outcome.job.id;
    };
    const [open, done] = [await make(1), await make(2)];
    await store.apply({ job_id: done, status: "completed", attempt: 1, at: 1, result: {} });
    await first.service.stop();
    await first.bus.close();

    const second = await start();
    const seen: JobWork[] = [];
    await second.bus.consume("jobs.work.inference", { durable: "inference" }, async (work) => void seen.push(work));
    const deadline = Date.now() + 10_000;
    while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.map((w) => w.job_id)).toEqual([open]);
    expect(seen[0]).toMatchObject({ attempt: 1, identity, request: { format: "json", body: { input: "x" } } });
    await second.service.stop();
    await second.bus.close();
  }, 20_000);
});

/**
 * A jobs service on an in-process bus, seen through `wrap` (so a test can slow or fail its
 * publishes), with `count` dispatched jobs of one workspace holding reservations of 1,000 + n
 * tokens, and the settlements that reach limits.settle, whichever form they travel in.
 */
async function jobsWithReservations(wrap: (bus: Bus) => Bus, tag: string, count: number) {
  const bus = createInProcessBus({ logger });
  const service = testJobsService({ db, bus: wrap(bus), internalSecret: "s".repeat(32), timings });
  await service.start();
  const store = new JobStore(db, timings.attemptTimeoutMs, timings.retentionMs);
  const identity = { workspace_id: `ws_${tag}`, key_id: "key", plan: "pro" as const, models: [["*"]], tools: [] };
  const settled: TokenSettlement[] = [];
  await bus.consume("limits.settle", { durable: "ingress" }, async (message) => void settled.push(...settlementsOf(message)));
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    const id = `job_${tag}${String(n).padStart(32 - tag.length, "0")}`;
    const tokenTicket = { workspace_id: identity.workspace_id, key_id: "key", bucket: 1, tokens: 1000 + n };
    await store.create({ id, route: "chat/completions", identity, request: { format: "json", body: { model: "m" } }, requestHash: "h", tokenTicket });
    await store.markDispatched(id, 1);
    ids.push(id);
  }
  return {
    bus,
    ids,
    settled,
    /** Until `count` settlements arrived (10 s at most), then `settleMs` more for any that should not. */
    async settledAfter(settleMs: number): Promise<TokenSettlement[]> {
      const deadline = Date.now() + 10_000;
      while (settled.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, settleMs));
      return settled;
    },
    async stop() {
      await service.stop();
      await bus.close();
    },
  };
}

describe("when jobs with token reservations finish", () => {
  it("then each job's reservation is settled once, with what it used (nothing for a failed one), on limits.settle, several in a message", async () => {
    // Each settlement message takes a while to be acked, as a busy server's does: those that finish
    // meanwhile wait for a free write and then go out together.
    const messages: unknown[] = [];
    const slow = (bus: Bus): Bus =>
      Object.assign(Object.create(bus) as Bus, {
        enqueue: async (...args: Parameters<Bus["enqueue"]>) => {
          if (args[0] === "limits.settle") {
            messages.push(args[1]);
            await new Promise((r) => setTimeout(r, 300));
          }
          return bus.enqueue(...args);
        },
      });
    const jobs = await jobsWithReservations(slow, "settle", 6);
    // All six finish at once, the last one failed; the first is reported twice (a redelivery).
    const events = jobs.ids.map((job_id, n) =>
      n === 5
        ? { job_id, status: "failed" as const, attempt: 1, at: Date.now(), error: { message: "upstream failed" } }
        : { job_id, status: "completed" as const, attempt: 1, at: Date.now(), result: { ok: n }, usage_tokens: 10 * (n + 1) },
    );
    await Promise.all([...events, events[0]!].map((event, k) => jobs.bus.enqueue("jobs.events", event, { msgId: `${event.job_id}:${k}` })));
    const settled = await jobs.settledAfter(200);
    expect(settled.map((s) => [s.job_id, s.used, s.ticket.tokens]).sort()).toEqual(jobs.ids.map((id, n) => [id, n === 5 ? 0 : 10 * (n + 1), 1000 + n]).sort());
    expect(messages.length).toBeLessThan(6);
    expect(messages.some((m) => "settlements" in (m as object) && (m as { settlements: unknown[] }).settlements.length > 1)).toBe(true);
    await jobs.stop();
  }, 20_000);

  it("then a settlement message whose ack was lost is sent again under the same id, and each reservation is settled once", async () => {
    let lostAcks = 0;
    const lossy = (bus: Bus): Bus =>
      Object.assign(Object.create(bus) as Bus, {
        enqueue: async (...args: Parameters<Bus["enqueue"]>) => {
          const sent = await bus.enqueue(...args);
          // The stream kept the first settlement message, but its publisher never heard so.
          if (args[0] === "limits.settle" && lostAcks++ === 0) throw new Error("timeout waiting for the ack");
          return sent;
        },
      });
    const jobs = await jobsWithReservations(lossy, "lostack", 3);
    await Promise.all(
      jobs.ids.map((job_id, n) =>
        jobs.bus.enqueue("jobs.events", { job_id, status: "completed", attempt: 1, at: Date.now(), result: {}, usage_tokens: n + 1 }, { msgId: job_id }),
      ),
    );
    // Long enough after the last for a resend (0.5 s) to have arrived, were it not dropped as a duplicate.
    const settled = await jobs.settledAfter(1_000);
    expect(lostAcks).toBeGreaterThan(1);
    expect(settled.map((s) => [s.job_id, s.used]).sort()).toEqual(jobs.ids.map((id, n) => [id, n + 1]).sort());
    await jobs.stop();
  }, 20_000);
});
