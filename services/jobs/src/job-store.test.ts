import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgliteDb, runMigrations, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import type { Identity } from "@gw/contracts";
import { JobStore, type NewJob } from "./job-store";
import { jobsMigrations } from "./service";

/** The rules of a job row, on PGlite (the same SQL and migrations as Postgres). */
let db: Db;
let store: JobStore;
const TIMEOUT_MS = 60_000;
const identity: Identity = { workspace_id: "ws_a", key_id: "key_a", plan: "pro", models: [["*"]], tools: [] };
let n = 0;

const newJob = (extra: Partial<NewJob> = {}): NewJob => ({
  id: `job_${String(++n).padStart(32, "0")}`,
  route: "embeddings",
  identity,
  request: { format: "json", body: { model: "m", input: "x" } },
  requestHash: "h1",
  ...extra,
});

beforeAll(async () => {
  db = await createPgliteDb();
  await runMigrations(db, { schema: "jobs", dir: jobsMigrations, logger: createLogger({ service: "t", level: "silent" }) });
  store = new JobStore(db, TIMEOUT_MS);
});
afterAll(() => db?.close());

async function created(extra: Partial<NewJob> = {}) {
  const outcome = await store.create(newJob(extra));
  if (outcome.kind !== "created") throw new Error(outcome.kind);
  return outcome.job;
}

const event = (job_id: string, status: string, at: number, extra = {}) => ({ job_id, status, attempt: 1, at, ...extra });

describe("when events arrive for a job", () => {
  it("then a finished job never changes again, whatever comes later or twice", async () => {
    const job = await created();
    expect((await store.apply(event(job.id, "processing", 1))).changed).toBe(true);
    expect((await store.apply(event(job.id, "completed", 2, { result: { ok: 1 } }))).changed).toBe(true);
    expect((await store.apply(event(job.id, "processing", 3))).changed).toBe(false);
    expect((await store.apply(event(job.id, "completed", 4, { result: { ok: 2 } }))).changed).toBe(false);
    expect((await store.apply(event(job.id, "failed", 5, { error: { e: 1 } }))).changed).toBe(false);
    const row = await store.read(job.id, "embeddings", "ws_a");
    expect(row).toMatchObject({ status: "completed", result: { ok: 1 }, error: null });
    expect(row?.completed_at).toBeInstanceOf(Date);
  });

  it("then a running status reported earlier than the current one is ignored, and a finish beats any running status", async () => {
    const job = await created();
    expect((await store.apply(event(job.id, "in_progress", 20))).changed).toBe(true);
    expect((await store.apply(event(job.id, "pending", 10))).changed).toBe(false);
    expect((await store.read(job.id, "embeddings", "ws_a"))?.status).toBe("in_progress");
    expect((await store.apply(event(job.id, "failed", 5, { error: { message: "x" } }))).changed).toBe(true);
    expect((await store.read(job.id, "embeddings", "ws_a"))?.status).toBe("failed");
  });

  it("then the upstream's task id is kept for a retry to resume", async () => {
    const job = await created();
    await store.apply(event(job.id, "pending", 1, { upstream_id: "up-1" }));
    await store.apply(event(job.id, "in_progress", 2));
    expect((await store.read(job.id, "embeddings", "ws_a"))?.upstream_id).toBe("up-1");
  });
});

describe("when a job with a token reservation finishes", () => {
  it("then the event that finished it, and only that one, hands back the reservation to settle", async () => {
    const ticket = { workspace_id: "ws_a", key_id: "key_a", bucket: 123, tokens: 2048 };
    const job = await created({ tokenTicket: ticket });
    expect(await store.apply(event(job.id, "processing", 1))).toEqual({ changed: true });
    expect(await store.apply(event(job.id, "completed", 2, { result: {}, usage_tokens: 40 }))).toEqual({ changed: true, ticket });
    expect(await store.apply(event(job.id, "completed", 3, { result: {}, usage_tokens: 40 }))).toEqual({ changed: false });
    const without = await created();
    expect(await store.apply(event(without.id, "failed", 1, { error: {} }))).toEqual({ changed: true });
  });
});

describe("when a job is read", () => {
  it("then only its workspace (and for a key-bound read, its key) on its route sees it", async () => {
    const job = await created();
    expect(await store.read(job.id, "embeddings", "ws_a")).toBeDefined();
    expect(await store.read(job.id, "embeddings", "ws_b")).toBeUndefined();
    expect(await store.read(job.id, "rerank", "ws_a")).toBeUndefined();
    expect(await store.read(job.id, "embeddings", "ws_a", "key_a")).toBeDefined();
    expect(await store.read(job.id, "embeddings", "ws_a", "key_b")).toBeUndefined();
  });
});

describe("when an idempotency key is reused", () => {
  it("then the same body replays the job, another body conflicts, and concurrent first uses make one job", async () => {
    const [a, b] = await Promise.all([store.create(newJob({ idempotencyKey: "k1" })), store.create(newJob({ idempotencyKey: "k1" }))]);
    expect([a.kind, b.kind].sort()).toEqual(["created", "replayed"]);
    expect(a.job.id).toBe(b.job.id);
    expect(await store.create(newJob({ idempotencyKey: "k1", requestHash: "other" }))).toMatchObject({ kind: "conflict", job: { id: a.job.id } });
    // Another key or another route may use the same idempotency key.
    expect((await store.create(newJob({ idempotencyKey: "k1", route: "rerank" }))).kind).toBe("created");
    expect((await store.create(newJob({ idempotencyKey: "k1", identity: { ...identity, key_id: "key_b" } }))).kind).toBe("created");
  });

  it("then a key older than a day is released for a new job", async () => {
    const first = await created({ idempotencyKey: "old" });
    await db.query("UPDATE jobs.jobs SET created_at = now() - interval '25 hours' WHERE id = $1", [first.id]);
    const second = await store.create(newJob({ idempotencyKey: "old", requestHash: "other" }));
    expect(second.kind).toBe("created");
    expect(second.job.id).not.toBe(first.id);
  });
});

describe("when the sweep looks at deadlines and retention", () => {
  it("then an overdue job with attempts left is queued again as a new attempt, and one without fails", async () => {
    const retried = await created();
    const exhausted = await created();
    await store.apply(event(retried.id, "processing", 1));
    await db.query("UPDATE jobs.jobs SET deadline_at = now() - interval '1 second' WHERE id IN ($1, $2)", [retried.id, exhausted.id]);
    await db.query("UPDATE jobs.jobs SET attempts = 3 WHERE id = $1", [exhausted.id]);
    const again = await store.retryOverdue(3, 100);
    expect(again.map((j) => j.id)).toEqual([retried.id]);
    expect(again[0]).toMatchObject({ status: "queued", attempts: 2 });
    expect(await store.failOverdue(3, (route, attempts) => ({ route, attempts }), 100)).toEqual([exhausted.id]);
    expect(await store.read(exhausted.id, "embeddings", "ws_a")).toMatchObject({ status: "failed", error: { route: "embeddings", attempts: 3 } });
    // The new attempt is undispatched until its work is published.
    expect((await store.undispatched(0, 100)).map((j) => j.id)).toContain(retried.id);
    await store.markDispatched(retried.id, 2);
    expect((await store.undispatched(0, 100)).map((j) => j.id)).not.toContain(retried.id);
  });

  it("then finished jobs past retention are removed and running ones are kept", async () => {
    const done = await created();
    const running = await created();
    await store.apply(event(done.id, "completed", 1, { result: {} }));
    await db.query("UPDATE jobs.jobs SET completed_at = now() - interval '2 hours' WHERE completed_at IS NOT NULL");
    expect(await store.removeFinished(3_600_000, 1000)).toBeGreaterThanOrEqual(1);
    expect(await store.read(done.id, "embeddings", "ws_a")).toBeUndefined();
    expect(await store.read(running.id, "embeddings", "ws_a")).toBeDefined();
  });
});
