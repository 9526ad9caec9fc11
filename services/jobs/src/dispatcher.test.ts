import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import type { Identity, JobWork } from "@gw/contracts";
import { createPgliteDb, runMigrations, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { Dispatcher } from "./dispatcher";
import { JobCredentials } from "./job-credentials";
import { JobStore } from "./job-store";
import { jobsMigrations } from "./service";

/** The dispatcher's work messages for requests the bus can and cannot carry (PGlite, the in-process bus at 1 MiB). */
const logger = createLogger({ service: "dispatcher-test", level: "silent" });
const timings = { attemptTimeoutMs: 60_000, maxAttempts: 3, retentionMs: 3_600_000, sweepIntervalMs: 60_000 };
const identity: Identity = { workspace_id: "ws_d", key_id: "key_d", plan: "pro", models: [["*"]], tools: [] };
let db: Db;
let bus: Bus;
let store: JobStore;
let dispatcher: Dispatcher;
const works: JobWork[] = [];
let n = 0;

beforeAll(async () => {
  db = await createPgliteDb();
  await runMigrations(db, { schema: "jobs", dir: jobsMigrations, logger });
  bus = createInProcessBus({ logger, maxPayloadBytes: 1024 * 1024 });
  await bus.consume("jobs.work.inference", { durable: "inference" }, async (work) => void works.push(work));
  store = new JobStore(db, timings.attemptTimeoutMs, timings.retentionMs);
  dispatcher = new Dispatcher(store, bus, timings, logger, new JobCredentials(undefined, "d".repeat(32)));
});
afterAll(async () => {
  await bus?.close();
  await db?.close();
});

async function created(request: Parameters<JobStore["create"]>[0]["request"], route = "audio/transcriptions") {
  const outcome = await store.create({ id: `job_${String(++n).padStart(32, "d")}`, route, identity, request, requestHash: "h" });
  return outcome.job;
}

async function delivered(id: string): Promise<JobWork> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const work = works.find((w) => w.job_id === id);
    if (work) return work;
    if (Date.now() > deadline) throw new Error(`no work for ${id}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("when a job's work is published", () => {
  it("then an upload the bus surely cannot carry is left in the row at once, counted exactly, never encoded whole", async () => {
    const request = {
      format: "multipart" as const,
      content_type: 'multipart/form-data; boundary="b"',
      base64: Buffer.alloc(3 * 1024 * 1024, 7).toString("base64"),
    };
    const job = await created(request);
    const enqueue = vi.spyOn(bus, "enqueue");
    try {
      expect(await dispatcher.dispatch(job)).toBe(true);
      expect(enqueue).toHaveBeenCalledTimes(1);
    } finally {
      enqueue.mockRestore();
    }
    expect((await delivered(job.id)).request).toEqual({ format: "stored", bytes: Buffer.byteLength(JSON.stringify(request)) });
  });

  it("then a small upload rides the message, and a JSON body too large for it is left in the row", async () => {
    const small = { format: "multipart" as const, content_type: "multipart/form-data; boundary=b", base64: Buffer.from("tiny").toString("base64") };
    const smallJob = await created(small);
    expect(await dispatcher.dispatch(smallJob)).toBe(true);
    expect((await delivered(smallJob.id)).request).toEqual(small);

    const large = { format: "json" as const, body: { model: "ocr", document: "x".repeat(2 * 1024 * 1024) } };
    const largeJob = await created(large, "ocr");
    expect(await dispatcher.dispatch(largeJob)).toBe(true);
    expect((await delivered(largeJob.id)).request).toEqual({ format: "stored", bytes: Buffer.byteLength(JSON.stringify(large)) });
  });
});
