import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus } from "@gw/bus";
import type { JobWork } from "@gw/contracts";
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
