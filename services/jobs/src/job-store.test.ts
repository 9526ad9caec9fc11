import { copyFileSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createPgliteDb, runMigrations, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import type { Identity } from "@gw/contracts";
import { JobStore, type NewJob } from "./job-store";
import { jobsMigrations } from "./service";

/** The rules of a job row, on PGlite (the same SQL and migrations as Postgres). */
let db: Db;
let store: JobStore;
const TIMEOUT_MS = 60_000;
const RETENTION_MS = 24 * 3_600_000;
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
  store = new JobStore(db, TIMEOUT_MS, RETENTION_MS);
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

describe("when events of several jobs arrive at once (one statement applies them)", () => {
  it("then each is applied as it would be alone, in arrival order, even with two events of one job side by side", async () => {
    const [a, b, c, d] = [await created(), await created(), await created(), await created()];
    const events = [
      event(a.id, "processing", 1),
      event(a.id, "completed", 2, { result: { a: 1 } }),
      event(a.id, "failed", 3, { error: { late: true } }),
      event(b.id, "in_progress", 20),
      event(b.id, "pending", 10),
      event(c.id, "completed", 5, { result: { c: 1 } }),
      event(d.id, "completed", 6, { attempt: 2, result: { stale: true } }),
      event(d.id, "failed", 7, { error: { d: 1 } }),
    ];
    const outcomes = await Promise.all(events.map((e) => store.apply(e)));
    expect(outcomes.map((o) => o.changed)).toEqual([true, true, false, true, false, true, false, true]);
    expect(outcomes.map((o) => o.finished !== undefined)).toEqual([false, true, false, false, false, true, false, true]);
    expect(outcomes[1]!.finished).toMatchObject({ workspace_id: "ws_a", route: "embeddings", request: expect.stringContaining('"input":"x"') });
    expect(await store.read(a.id, "embeddings", "ws_a")).toMatchObject({ status: "completed", result: { a: 1 }, error: null });
    expect((await store.read(b.id, "embeddings", "ws_a"))?.status).toBe("in_progress");
    expect(await store.read(c.id, "embeddings", "ws_a")).toMatchObject({ status: "completed", result: { c: 1 } });
    expect(await store.read(d.id, "embeddings", "ws_a")).toMatchObject({ status: "failed", result: null, error: { d: 1 } });
  });
});

describe("when one statement of a group of events fails", () => {
  it("then none of the group stays applied, and each event applied alone again keeps its finish, its reservation and its answer", async () => {
    const ticket = { workspace_id: "ws_a", key_id: "key_a", bucket: 3, tokens: 500 };
    const [a, x] = [await created({ tokenTicket: ticket }), await created()];
    // The second statement of the group (x's second event, after its first) fails once, as a
    // deadlock's victim or a dropped connection would.
    let failed = false;
    const failSecondRound = (query: Db["query"]): Db["query"] =>
      (async (sql: string, params?: unknown[]) => {
        const ids = params?.[1];
        if (!failed && sql.includes("WITH ORDINALITY AS e(") && Array.isArray(ids) && ids.length === 1 && ids[0] === x.id) {
          failed = true;
          throw new Error("deadlock detected");
        }
        return query(sql, params);
      }) as Db["query"];
    const flaky: Db = Object.assign(Object.create(db) as Db, {
      query: failSecondRound(db.query.bind(db)),
      transaction: <T>(fn: (tx: Parameters<Parameters<Db["transaction"]>[0]>[0]) => Promise<T>) =>
        db.transaction((tx) => fn({ ...tx, query: failSecondRound(tx.query.bind(tx)) })),
    });
    const flakyStore = new JobStore(flaky, TIMEOUT_MS, RETENTION_MS);
    const outcomes = await Promise.all([
      flakyStore.apply(event(a.id, "completed", 2, { result: { a: 1 } })),
      flakyStore.apply(event(x.id, "processing", 1)),
      flakyStore.apply(event(x.id, "completed", 2, { result: { x: 1 } })),
    ]);
    expect(failed).toBe(true);
    expect(outcomes.map((o) => o.changed)).toEqual([true, true, true]);
    expect(outcomes[0]).toMatchObject({ ticket, finished: { workspace_id: "ws_a" } });
    expect(outcomes[2]!.finished).toBeDefined();
    expect(await store.read(a.id, "embeddings", "ws_a")).toMatchObject({ status: "completed", result: { a: 1 } });
    expect(await store.read(x.id, "embeddings", "ws_a")).toMatchObject({ status: "completed", result: { x: 1 } });
  });
});

describe("when a job with a token reservation finishes", () => {
  it("then the event that finished it, and only that one, hands back the reservation to settle", async () => {
    const ticket = { workspace_id: "ws_a", key_id: "key_a", bucket: 123, tokens: 2048 };
    const job = await created({ tokenTicket: ticket });
    expect(await store.apply(event(job.id, "processing", 1))).toEqual({ changed: true });
    const finishing = await store.apply(event(job.id, "completed", 2, { result: {}, usage_tokens: 40 }));
    expect(finishing).toMatchObject({ changed: true, ticket, finished: { workspace_id: "ws_a", key_id: "key_a", route: "embeddings" } });
    expect(await store.apply(event(job.id, "completed", 3, { result: {}, usage_tokens: 40 }))).toEqual({ changed: false });
    const without = await created();
    const failing = await store.apply(event(without.id, "failed", 1, { error: {} }));
    expect(failing.changed).toBe(true);
    expect(failing.ticket).toBeUndefined();
    expect(failing.finished?.route).toBe("embeddings");
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

  it("then a poll reads only what its answer is made of, never the request, identity or credentials, and only for its workspace", async () => {
    const job = await created({ request: { format: "json", body: { model: "m", input: "x".repeat(100_000) } } });
    await store.apply(event(job.id, "completed", 1, { result: { ok: true } }));
    const polled = await store.poll(job.id, "embeddings", "ws_a");
    expect(Object.keys(polled ?? {}).sort()).toEqual(["attempts", "completed_at", "created_at", "error", "id", "result", "result_bytes", "status"]);
    expect(polled).toMatchObject({ id: job.id, status: "completed", result: { ok: true }, error: null, result_bytes: null, attempts: 1 });
    expect(await store.poll(job.id, "embeddings", "ws_b")).toBeUndefined();
    expect(await store.poll(job.id, "embeddings", "ws_a", "key_b")).toBeUndefined();
  });
});

describe("when a finished job is polled again", () => {
  it("then its answer comes from memory, for its own workspace, key and route only, while an unfinished job is read each time", async () => {
    const job = await created();
    const queries = vi.spyOn(db, "query");
    try {
      expect((await store.poll(job.id, "embeddings", "ws_a"))?.status).toBe("queued");
      expect((await store.poll(job.id, "embeddings", "ws_a"))?.status).toBe("queued");
      expect(queries).toHaveBeenCalledTimes(2);
      await store.apply(event(job.id, "completed", 1, { result: { ok: 1 } }));
      queries.mockClear();
      // The process that applied the finish answers from what it wrote.
      const fromRow = await db.query("SELECT completed_at FROM jobs.jobs WHERE id = $1", [job.id]);
      queries.mockClear();
      for (let i = 0; i < 3; i++) {
        expect(await store.poll(job.id, "embeddings", "ws_a")).toEqual({
          id: job.id,
          status: "completed",
          created_at: job.created_at,
          completed_at: (fromRow.rows[0] as { completed_at: Date }).completed_at,
          result: { ok: 1 },
          error: null,
          result_bytes: null,
          attempts: 1,
        });
      }
      expect(await store.poll(job.id, "embeddings", "ws_a", "key_a")).toMatchObject({ status: "completed" });
      expect(queries).toHaveBeenCalledTimes(0);
      expect(await store.poll(job.id, "embeddings", "ws_b")).toBeUndefined();
      expect(await store.poll(job.id, "rerank", "ws_a")).toBeUndefined();
      expect(await store.poll(job.id, "embeddings", "ws_a", "key_b")).toBeUndefined();

      // Another replica reads the finished row once, then answers from memory too.
      const replica = new JobStore(db, TIMEOUT_MS, RETENTION_MS);
      queries.mockClear();
      for (let i = 0; i < 3; i++) expect(await replica.poll(job.id, "embeddings", "ws_a")).toMatchObject({ status: "completed", result: { ok: 1 } });
      expect(queries).toHaveBeenCalledTimes(1);
      // It did not learn the job's key from that read: a poll bound to a key still asks Postgres.
      expect(await replica.poll(job.id, "embeddings", "ws_a", "key_b")).toBeUndefined();
      expect(queries).toHaveBeenCalledTimes(2);
    } finally {
      queries.mockRestore();
    }
  });

  it("then a batch's line is not kept in memory when it finishes: nobody polls it", async () => {
    const line = await created({ batch: { id: "batch_x", line: 1, customId: "c1" } });
    await store.apply(event(line.id, "completed", 1, { result: { ok: 1 } }));
    const queries = vi.spyOn(db, "query");
    try {
      expect(await store.poll(line.id, "embeddings", "ws_a")).toMatchObject({ status: "completed" });
      expect(queries).toHaveBeenCalledTimes(1);
    } finally {
      queries.mockRestore();
    }
  });

  it("then a job whose row retention may already have removed is read from Postgres, and is gone once removed", async () => {
    const shortKept = new JobStore(db, TIMEOUT_MS, 1_000);
    const job = await created();
    await store.apply(event(job.id, "failed", 1, { error: { message: "x" } }));
    expect(await shortKept.poll(job.id, "embeddings", "ws_a")).toMatchObject({ status: "failed", error: { message: "x" } });
    await db.query("DELETE FROM jobs.jobs WHERE id = $1", [job.id]);
    expect(await shortKept.poll(job.id, "embeddings", "ws_a")).toBeUndefined();
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

describe("when a worker hands over a result too large for a bus message", () => {
  it("then only the job's workspace and current attempt may store it, and the finished event must name a stored one", async () => {
    const job = await created();
    const body = Buffer.from(JSON.stringify({ object: "binary", data: "x".repeat(3000) }));
    expect(await store.storeResult(job.id, 1, "ws_other", body)).toBe(false);
    expect(await store.storeResult(job.id, 2, "ws_a", body)).toBe(false);
    const stored = { ...event(job.id, "completed", 2), result_stored: { bytes: body.length } };
    // Named but not stored: the event changes nothing.
    expect((await store.apply(stored)).changed).toBe(false);
    expect(await store.storeResult(job.id, 1, "ws_a", body)).toBe(true);
    expect((await store.apply(stored)).changed).toBe(true);
    const done = await store.read(job.id, "embeddings", "ws_a");
    expect(done).toMatchObject({ status: "completed", result: null, result_bytes: body.length });
    // Read back in slices, it is the same bytes.
    const slices = [
      await store.resultSlice(job.id, 1, 0, 1000),
      await store.resultSlice(job.id, 1, 1000, 1000),
      await store.resultSlice(job.id, 1, 2000, 5000),
    ];
    expect(Buffer.concat(slices).equals(body)).toBe(true);
    // A finished job takes no result any more.
    expect(await store.storeResult(job.id, 1, "ws_a", Buffer.from("{}"))).toBe(false);
  });

  it("then the request a work message could not carry is served to its workspace while the job is open", async () => {
    const job = await created();
    expect(JSON.parse((await store.requestText(job.id, "ws_a"))!)).toEqual({ format: "json", body: { model: "m", input: "x" } });
    expect(await store.requestText(job.id, "ws_other")).toBeUndefined();
    await store.apply(event(job.id, "failed", 1, { error: {} }));
    expect(await store.requestText(job.id, "ws_a")).toBeUndefined();
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
    expect((await store.failOverdue(3, (route, attempts) => ({ route, attempts }), 100)).map((f) => f.id)).toEqual([exhausted.id]);
    expect(await store.read(exhausted.id, "embeddings", "ws_a")).toMatchObject({ status: "failed", error: { route: "embeddings", attempts: 3 } });
    // The new attempt is undispatched until its work is published.
    expect((await store.undispatched(0, 100)).map((j) => j.id)).toContain(retried.id);
    await store.markDispatched(retried.id, 2);
    expect((await store.undispatched(0, 100)).map((j) => j.id)).not.toContain(retried.id);
  });

  it("then a superseded attempt's events change nothing, and the attempt that replaced it finishes the job", async () => {
    const job = await created();
    await store.apply(event(job.id, "processing", 1));
    await db.query("UPDATE jobs.jobs SET deadline_at = now() - interval '1 second' WHERE id = $1", [job.id]);
    expect((await store.retryOverdue(3, 100)).map((j) => [j.id, j.attempts])).toEqual([[job.id, 2]]);
    // Attempt 1 answers late: neither its running status nor its result may touch the job.
    expect((await store.apply(event(job.id, "processing", 2))).changed).toBe(false);
    expect((await store.apply(event(job.id, "completed", 3, { result: { from: 1 } }))).changed).toBe(false);
    expect(await store.read(job.id, "embeddings", "ws_a")).toMatchObject({ status: "queued", attempts: 2, result: null });
    const second = { ...event(job.id, "completed", 4, { result: { from: 2 } }), attempt: 2 };
    expect(await store.apply(second)).toMatchObject({ changed: true, finished: { route: "embeddings" } });
    expect(await store.read(job.id, "embeddings", "ws_a")).toMatchObject({ status: "completed", attempts: 2, result: { from: 2 } });
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

describe("when a job's text holds \\u0000 or lone surrogates", () => {
  const hostile = "nul:\u0000 lone high:\ud800 lone low:\udfff pair:\ud83d\ude00 end";

  it("then the request, result and error are stored and read back with every character intact", async () => {
    const request = { format: "json" as const, body: { model: "m", input: hostile, [`key${hostile}`]: [hostile] } };
    const job = await created({ request });
    expect(job.request).toEqual(request);
    await store.apply(event(job.id, "completed", 1, { result: { text: hostile } }));
    expect(await store.read(job.id, "embeddings", "ws_a")).toMatchObject({ status: "completed", request, result: { text: hostile } });
    const failed = await created({ request });
    await store.apply(event(failed.id, "failed", 1, { error: { error: { message: hostile } } }));
    expect((await store.read(failed.id, "embeddings", "ws_a"))?.error).toEqual({ error: { message: hostile } });
  });

  it("then an idempotent replay and the sweep read the request back intact too", async () => {
    const request = { format: "json" as const, body: { model: "m", input: hostile } };
    await created({ request, idempotencyKey: "hostile", requestHash: "hh" });
    const replay = await store.create(newJob({ request, idempotencyKey: "hostile", requestHash: "hh" }));
    expect(replay).toMatchObject({ kind: "replayed", job: { request } });
    const undispatched = await store.undispatched(-60_000, 1000);
    expect(undispatched.find((j) => j.id === replay.job.id)?.request).toEqual(request);
  });

  it("then a worker's status and an upstream's task id holding \\u0000 are stored without it, rather than failing the event", async () => {
    const job = await created();
    expect((await store.apply(event(job.id, "in_\u0000progress", 1, { upstream_id: "up\u0000-1" }))).changed).toBe(true);
    expect(await store.read(job.id, "embeddings", "ws_a")).toMatchObject({ status: "in_progress", upstream_id: "up-1" });
  });
});

describe("when a job holds a workspace's own credentials", () => {
  const sealed = { openai: { sealed: "v1.sealed-at-rest", version: 0 } };
  const credentialsOf = async (id: string) =>
    (await db.query<{ credentials: unknown; transit_credentials: unknown }>("SELECT credentials, transit_credentials FROM jobs.jobs WHERE id = $1", [id]))
      .rows[0];

  it("then the statement that finishes it, completed, failed or failed overdue, also forgets them", async () => {
    const [done, failed, overdue] = [await created({ credentials: sealed }), await created({ credentials: sealed }), await created({ credentials: sealed })];
    expect(await credentialsOf(done.id)).toEqual({ credentials: sealed, transit_credentials: null });
    await store.apply(event(done.id, "processing", 1));
    expect((await credentialsOf(done.id))?.credentials).toEqual(sealed); // still running: kept
    await store.apply(event(done.id, "completed", 2, { result: {} }));
    await store.apply(event(failed.id, "failed", 1, { error: {} }));
    await db.query("UPDATE jobs.jobs SET deadline_at = now() - interval '1 second', attempts = 3 WHERE id = $1", [overdue.id]);
    expect((await store.failOverdue(3, () => ({}), 1000)).map((f) => f.id)).toContain(overdue.id);
    for (const id of [done.id, failed.id, overdue.id]) expect(await credentialsOf(id)).toEqual({ credentials: null, transit_credentials: null });
  });

  it("then a change to a workspace's credential reaches its unfinished jobs only, and an older change never undoes a newer one", async () => {
    const ws = { ...identity, workspace_id: "ws_changes" };
    const [open, bare, finished] = [
      await created({ identity: ws, credentials: sealed }),
      await created({ identity: ws }),
      await created({ identity: ws, credentials: sealed }),
    ];
    const other = await created({ credentials: sealed });
    await store.apply(event(finished.id, "completed", 1, { result: {} }));
    expect(await store.applyCredentialChange({ workspace_id: "ws_changes", provider: "openai", sealed: "v1.rotated", version: 20 })).toBe(2);
    expect((await credentialsOf(open.id))?.credentials).toEqual({ openai: { sealed: "v1.rotated", version: 20 } });
    expect((await credentialsOf(bare.id))?.credentials).toEqual({ openai: { sealed: "v1.rotated", version: 20 } });
    expect((await credentialsOf(finished.id))?.credentials).toBeNull();
    expect((await credentialsOf(other.id))?.credentials).toEqual(sealed);
    // A removal, then an older put arriving late: the removal stands.
    await store.applyCredentialChange({ workspace_id: "ws_changes", provider: "openai", version: 30 });
    expect(await store.applyCredentialChange({ workspace_id: "ws_changes", provider: "openai", sealed: "v1.older", version: 25 })).toBe(0);
    expect((await credentialsOf(open.id))?.credentials).toEqual({ openai: { version: 30 } });
    await store.applyCredentialChange({ workspace_id: "ws_changes", provider: "anthropic", sealed: "v1.ant", version: 31 });
    expect((await credentialsOf(open.id))?.credentials).toEqual({ openai: { version: 30 }, anthropic: { sealed: "v1.ant", version: 31 } });
  });
});

describe("when migration 0004 runs over jobs written before it", () => {
  it("then their JSON survives as text, and only unfinished jobs keep their credentials header", async () => {
    const old = await createPgliteDb();
    try {
      const before = mkdtempSync(join(tmpdir(), "jobs-migrations-"));
      for (const file of readdirSync(jobsMigrations).filter((f) => f < "0004")) copyFileSync(join(jobsMigrations, file), join(before, file));
      await runMigrations(old, { schema: "jobs", dir: before });
      const insert = (id: string, status: string) =>
        old.query(
          `INSERT INTO jobs.jobs (id, workspace_id, key_id, route, request, status, result, error, credentials)
           VALUES ($1, 'ws', 'key', 'embeddings', $2, $3, $4, $5, 'v1.transit-header')`,
          [
            id,
            JSON.stringify({ format: "json", body: { input: 'é ☃ \ud83d\ude00 \\ "q"', n: [1, 2.5, null, true] } }),
            status,
            JSON.stringify({ ok: "yes" }),
            JSON.stringify(null),
          ],
        );
      await insert("job_open", "processing");
      await insert("job_done", "completed");
      await runMigrations(old, { schema: "jobs", dir: jobsMigrations });
      const oldStore = new JobStore(old, TIMEOUT_MS, RETENTION_MS);
      for (const id of ["job_open", "job_done"]) {
        expect(await oldStore.read(id, "embeddings", "ws"), id).toMatchObject({
          request: { format: "json", body: { input: 'é ☃ \ud83d\ude00 \\ "q"', n: [1, 2.5, null, true] } },
          result: { ok: "yes" },
          error: null,
        });
      }
      expect((await oldStore.read("job_open", "embeddings", "ws"))?.transit_credentials).toBe("v1.transit-header");
      expect((await oldStore.read("job_done", "embeddings", "ws"))?.transit_credentials).toBeNull();
      // The service then seals the open job's header at rest (JobCredentials.fromTransit) in its place.
      expect(await oldStore.withTransitCredentials(10)).toEqual([{ id: "job_open", workspace_id: "ws", transit_credentials: "v1.transit-header" }]);
      const sealed = { openai: { sealed: "v1.at-rest", version: 0 } };
      expect(await oldStore.convertTransit("job_open", "v1.transit-header", sealed)).toBe(true);
      expect(await oldStore.read("job_open", "embeddings", "ws")).toMatchObject({ credentials: sealed, transit_credentials: null });
      expect(await oldStore.withTransitCredentials(10)).toEqual([]);
    } finally {
      await old.close();
    }
  });
});
