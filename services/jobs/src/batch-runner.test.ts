import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { settlementsOf, type AdmissionAnswer, type AdmissionRequest, type Identity, type JobWork, type TokenSettlement } from "@gw/contracts";
import { createPgliteDb, runMigrations, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { Catalog, CredentialsReader, credentialsTransitPurpose, Sealer } from "@gw/service-kit";
import { type Admit, BatchRunner, parseBatchInput } from "./batch-runner";
import { BatchStore } from "./batch-store";
import { Dispatcher } from "./dispatcher";
import { FileStore } from "./file-store";
import { JobCredentials } from "./job-credentials";
import { JobStore } from "./job-store";
import { jobsMigrations } from "./service";

/**
 * The batch runner on PGlite (the same SQL and migrations as Postgres), with ingress's admission
 * played by the test and the workers' events applied straight to the job store.
 */
const logger = createLogger({ service: "batch-runner-test", level: "silent" });
const limits = { requests_per_minute: 1, tokens_per_minute: 1 };
const gateway = GatewayConfig.parse({
  providers: { openai: { kind: "openai", base_url: "http://127.0.0.1:9/v1" } },
  models: { gpt: { type: "chat", routes: [{ provider: "openai", model: "gpt-4o-mini" }] } },
  plans: { plus: limits, pro: limits, enterprise: limits },
});
const timings = { attemptTimeoutMs: 60_000, maxAttempts: 3, retentionMs: 3_600_000, sweepIntervalMs: 100 };
const identity: Identity = { workspace_id: "ws_batch", key_id: "key_batch", plan: "pro", models: [["*"]], tools: [] };
const chat = (id: string, text: string, model = "gpt") =>
  JSON.stringify({ custom_id: id, method: "POST", url: "/v1/chat/completions", body: { model, messages: [{ role: "user", content: text }] } });

let db: Db;
let bus: Bus;
let jobs: JobStore;
let files: FileStore;
let batches: BatchStore;
let works: JobWork[];
let settlements: TokenSettlement[];

beforeAll(async () => {
  db = await createPgliteDb();
  await runMigrations(db, { schema: "jobs", dir: jobsMigrations, logger });
  bus = createInProcessBus({ logger });
  works = [];
  settlements = [];
  await bus.consume("jobs.work.inference", { durable: "inference" }, async (work) => void works.push(work));
  await bus.consume("limits.settle", { durable: "ingress" }, async (message) => void settlements.push(...settlementsOf(message)));
  jobs = new JobStore(db, timings.attemptTimeoutMs, timings.retentionMs);
  files = new FileStore(db);
  batches = new BatchStore(db);
});
afterAll(async () => {
  await bus?.close();
  await db?.close();
});

const SECRET = "s".repeat(32);
const runnerWith = (admit: Admit, masterKey?: string) => {
  const credentials = new JobCredentials(masterKey, SECRET);
  const dispatcher = new Dispatcher(jobs, bus, timings, logger, credentials);
  return new BatchRunner({ batches, files, jobs, dispatcher, catalog: new Catalog(gateway), credentials, admit, bus, logger });
};

/** Admits every line, with a token reservation each. */
const admitAll: Admit = async (ask) => ({
  lines: ask.bodies.map(() => ({ kind: "admitted" as const, ticket: { workspace_id: ask.workspace_id, key_id: ask.key_id, bucket: 1, tokens: 10 } })),
});

async function newBatch(lines: string[]) {
  const file = await files.create({
    workspaceId: identity.workspace_id,
    purpose: "batch",
    filename: "in.jsonl",
    content: Buffer.from(lines.join("\n")),
    expiresInSeconds: 3600,
  });
  return batches.create({ identity, endpoint: "/v1/chat/completions", inputFileId: file.id, completionWindow: "24h" });
}

const lineJobs = async (batchId: string) =>
  (
    await db.query<{ id: string; batch_line: number; custom_id: string; status: string; attempts: number }>(
      "SELECT id, batch_line, custom_id, status, attempts FROM jobs.jobs WHERE batch_id = $1 ORDER BY batch_line",
      [batchId],
    )
  ).rows;

/** Runs rounds until the batch is in one of `statuses` (a deadline, not a fixed number of rounds). */
async function until(runner: BatchRunner, id: string, statuses: string[], finish?: (batchId: string) => Promise<void>) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    // Due now: a batch waiting on its limits or its running lines is looked at again at once.
    await db.query("UPDATE jobs.batches SET wake_at = NULL WHERE id = $1", [id]);
    await runner.tick();
    if (finish) await finish(id);
    const batch = await batches.read(id, identity.workspace_id);
    if (batch && statuses.includes(batch.status)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} is still ${batch?.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Plays the workers: every open line job of the batch completes with a chat answer (its usage from its line). */
const completeAll = (result: (line: number) => string) => async (batchId: string) => {
  for (const job of await lineJobs(batchId)) {
    if (job.status !== "queued") continue;
    await db.query("UPDATE jobs.jobs SET status = 'completed', result = $2, completed_at = now(), status_code = 200 WHERE id = $1", [
      job.id,
      result(job.batch_line),
    ]);
  }
};

describe("parseBatchInput", () => {
  it("when lines end in CRLF or a blank line sits between them, then they are read and numbered as the file's lines", () => {
    const { lines, errors } = parseBatchInput(Buffer.from(`${chat("a", "1")}\r\n\r\n${chat("b", "2")}\r\n`), "/v1/chat/completions");
    expect(errors).toEqual([]);
    expect(lines.map((l) => [l.line, l.custom_id])).toEqual([
      [1, "a"],
      [3, "b"],
    ]);
    expect(JSON.parse(lines[1]!.body)).toEqual({ model: "gpt", messages: [{ role: "user", content: "2" }] });
  });

  it("when a file has more bad lines than are reported, then the last error counts the rest; an empty file is an error of its own", () => {
    const bad = Array.from({ length: 150 }, () => "nope").join("\n");
    const { errors } = parseBatchInput(Buffer.from(bad), "/v1/chat/completions");
    expect(errors).toHaveLength(101);
    expect(errors.at(-1)).toEqual({ code: "too_many_errors", message: "50 more lines are invalid.", line: null });
    expect(parseBatchInput(Buffer.from("\n\n"), "/v1/chat/completions").errors.map((e) => e.code)).toEqual(["empty_file"]);
    const wrongMethod = JSON.stringify({ custom_id: "x", method: "GET", url: "/v1/chat/completions", body: {} });
    expect(parseBatchInput(Buffer.from(wrongMethod), "/v1/chat/completions").errors[0]).toMatchObject({ code: "invalid_request", param: "method", line: 1 });
  });
});

describe("when a batch runs", () => {
  it("then its lines are admitted in order, a line the limits have no room for waits with those after it, and each line runs once", async () => {
    const batch = await newBatch(Array.from({ length: 5 }, (_, i) => chat(`c${i}`, `line ${i}`)));
    const asked: AdmissionRequest[] = [];
    let waits = 1;
    const runner = runnerWith(async (ask): Promise<AdmissionAnswer> => {
      asked.push(ask);
      // The first call has room for two lines only; the third must wait, once.
      if (asked.length === 1 && waits-- > 0) {
        const ok = (await admitAll(ask)).lines.slice(0, 2);
        return { lines: [...ok, { kind: "wait", retry_after_ms: 60_000 }] };
      }
      return admitAll(ask);
    });
    await runner.tick();
    const first = await batches.read(batch.id, identity.workspace_id);
    expect(first?.status).toBe("in_progress");
    await runner.tick();
    expect((await lineJobs(batch.id)).map((j) => j.custom_id)).toEqual(["c0", "c1"]);
    // Told to wait a minute: nothing more is asked until then.
    await runner.tick();
    expect(asked).toHaveLength(1);
    const done = await until(
      runner,
      batch.id,
      ["completed"],
      completeAll((line) => JSON.stringify({ id: `r${line}`, usage: { prompt_tokens: line, completion_tokens: 1, total_tokens: line + 1 } })),
    );
    expect(asked.map((a) => a.bodies.length)).toEqual([5, 3]);
    expect(done.request_counts).toEqual({ total: 5, completed: 5, failed: 0 });
    expect(done.usage).toMatchObject({ input_tokens: 1 + 2 + 3 + 4 + 5, output_tokens: 5, total_tokens: 20 });
    // Each line's work went on the bus once (published in the background: waited for, not assumed).
    const ids = (await lineJobs(batch.id)).map((j) => j.id);
    await expect.poll(() => works.filter((w) => ids.includes(w.job_id)).length).toBe(5);
    expect(new Set(works.filter((w) => ids.includes(w.job_id)).map((w) => w.job_id)).size).toBe(5);
    const output = (await files.content(done.output_file_id!, identity.workspace_id))!.toString("utf8");
    expect(output.endsWith("\n")).toBe(true);
    expect(
      output
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { custom_id: string }).custom_id),
    ).toEqual(["c0", "c1", "c2", "c3", "c4"]);
    // The input's lines go once the files hold them; the line jobs stay for the jobs' retention, so
    // that an event delivered again still finds its job (and its usage record and settlement go out).
    expect((await db.query("SELECT 1 FROM jobs.batch_lines WHERE batch_id = $1", [batch.id])).rows).toEqual([]);
    expect((await lineJobs(batch.id)).map((j) => j.status)).toEqual(Array(5).fill("completed"));
    const again = await jobs.apply({ job_id: (await lineJobs(batch.id))[0]!.id, status: "completed", attempt: 1, at: 99 });
    expect(again.changed).toBe(false);
    expect(await jobs.finishedJob((await lineJobs(batch.id))[0]!.id)).toMatchObject({ request_id: expect.stringMatching(/^batch_req_/) });
    // Past retention, the finished batch's line jobs go like any job's.
    await db.query("UPDATE jobs.jobs SET completed_at = now() - interval '2 hours' WHERE batch_id = $1", [batch.id]);
    expect(await jobs.removeFinished(3_600_000, 100)).toBeGreaterThanOrEqual(5);
    expect(await lineJobs(batch.id)).toEqual([]);
  });

  it("then two runners racing over one batch admit each line once, and the loser gives back what ingress reserved for it", async () => {
    const input = Array.from({ length: 40 }, (_, i) => chat(`r${i}`, `race ${i}`));
    const batch = await newBatch(input);
    const [claimed] = await batches.claim(1);
    expect(await batches.startRunning(claimed!, parseBatchInput(Buffer.from(input.join("\n")), "/v1/chat/completions").lines)).toBe(true);
    const before = settlements.length;
    // Both read the batch at the same cursor (the lease is set aside): one advance wins.
    const row = (await batches.read(batch.id, identity.workspace_id))!;
    const [a, b] = [runnerWith(admitAll), runnerWith(admitAll)];
    const step = (runner: BatchRunner) => (runner as unknown as { step(b: typeof row): Promise<number> }).step(row);
    await Promise.all([step(a), step(b)]);
    const rows = await lineJobs(batch.id);
    expect(rows.map((r) => r.batch_line)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    await expect.poll(() => settlements.length - before).toBe(40);
    expect(settlements.slice(before).every((s) => s.used === 0 && s.ticket.tokens === 10)).toBe(true);
  });

  it("then a step whose lease another claim has taken changes nothing, and gives back what ingress reserved for it", async () => {
    const input = [chat("l0", "a"), chat("l1", "b")];
    const batch = await newBatch(input);
    const [claimed] = await batches.claim(1);
    expect(await batches.startRunning(claimed!, parseBatchInput(Buffer.from(input.join("\n")), "/v1/chat/completions").lines)).toBe(true);
    // The lease lapsed and another replica claimed the batch: its token is no longer this step's.
    await db.query("UPDATE jobs.batches SET lease_token = 'another-claim' WHERE id = $1", [batch.id]);
    const before = settlements.length;
    const row = (await batches.read(batch.id, identity.workspace_id))!;
    const step = (runnerWith(admitAll) as unknown as { step(b: typeof row): Promise<number> }).step({ ...row, lease_token: claimed!.lease_token });
    await step;
    expect(await lineJobs(batch.id)).toEqual([]);
    await expect.poll(() => settlements.length - before).toBe(2);
    expect(await batches.finalize({ ...row, lease_token: claimed!.lease_token }, "completed")).toBe(false);
    expect((await batches.read(batch.id, identity.workspace_id))?.status).toBe("in_progress");
    await db.query("UPDATE jobs.batches SET status = 'cancelled' WHERE id = $1", [batch.id]);
  });

  it("then a batch cancelled while a step waits on the limits is due at once, not when the limits would have had room", async () => {
    const batch = await newBatch([chat("c0", "a"), chat("c1", "b")]);
    const [claimed] = await batches.claim(1);
    // The step under way was told to wait a minute for the key's limits; the cancel comes meanwhile.
    expect((await batches.cancel(batch.id, identity.workspace_id)).kind).toBe("ok");
    await batches.release(claimed!, 60_000);
    expect((await batches.claim(4)).map((b) => b.id)).toContain(batch.id);
    await db.query("UPDATE jobs.batches SET lease_until = NULL, lease_token = NULL WHERE id = $1", [batch.id]);
    expect((await until(runnerWith(admitAll), batch.id, ["cancelled"])).status).toBe("cancelled");
    // A cancelling batch whose lines still run waits as its step says, not claimed again at once.
    const running = await newBatch([chat("r0", "a")]);
    await until(runnerWith(admitAll), running.id, ["in_progress"]);
    await until(runnerWith(admitAll), running.id, ["in_progress"]);
    expect((await lineJobs(running.id)).map((j) => j.status)).toEqual(["queued"]);
    expect((await batches.cancel(running.id, identity.workspace_id)).kind).toBe("ok");
    const [cancelling] = await batches.claim(4);
    expect(cancelling?.id).toBe(running.id);
    await batches.release(cancelling!, 60_000);
    expect((await batches.claim(4)).map((b) => b.id)).not.toContain(running.id);
    await db.query("UPDATE jobs.batches SET status = 'cancelled' WHERE id = $1", [running.id]);
    // One not cancelled waits as it was told.
    const other = await newBatch([chat("w0", "a")]);
    const [waiting] = await batches.claim(4);
    expect(waiting?.id).toBe(other.id);
    await batches.release(waiting!, 60_000);
    expect((await batches.claim(4)).map((b) => b.id)).not.toContain(other.id);
    await db.query("UPDATE jobs.batches SET status = 'cancelled' WHERE id = $1", [other.id]);
  });

  it("then a batch is not finalized while a line of it still runs, whatever its state says", async () => {
    const batch = await newBatch([chat("f0", "a")]);
    const runner = runnerWith(admitAll);
    await runner.tick();
    await runner.tick();
    expect((await lineJobs(batch.id)).map((j) => j.status)).toEqual(["queued"]);
    const [claimed] = await (async () => {
      await db.query("UPDATE jobs.batches SET wake_at = NULL, lease_until = NULL WHERE id = $1", [batch.id]);
      return batches.claim(1);
    })();
    expect(await batches.finalize(claimed!, "cancelled")).toBe(false);
    await batches.release(claimed!, 0);
    await until(
      runner,
      batch.id,
      ["completed"],
      completeAll(() => "{}"),
    );
  });

  it("then an output of more than a thousand lines is written in parts of a thousand, which read back as one file in order", async () => {
    const batch = await newBatch(Array.from({ length: 2_500 }, (_, i) => chat(`p${i}`, `part ${i}`)));
    const runner = runnerWith(admitAll);
    const done = await until(
      runner,
      batch.id,
      ["completed"],
      completeAll((line) => JSON.stringify({ line })),
    );
    const parts = await files.parts(done.output_file_id!);
    expect(parts.map((p) => p.part)).toEqual([0, 1, 2]);
    const file = (await files.read(done.output_file_id!, identity.workspace_id))!;
    expect(Number(file.bytes)).toBe(parts.reduce((n, p) => n + p.bytes, 0));
    const text = (await files.content(done.output_file_id!, identity.workspace_id))!.toString("utf8");
    const lines = text.split("\n");
    expect(lines.pop()).toBe("");
    expect(lines.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id)).toEqual(Array.from({ length: 2_500 }, (_, i) => `p${i}`));
    // A slice across the end of a part is that part's bytes only.
    const first = await files.slice(done.output_file_id!, 0, parts[0]!.bytes - 10, 100);
    expect(first?.length).toBe(10);
  });

  it("then an enterprise workspace's own credentials, as ingress hands them over, run its lines sealed at rest, or refuse them without a master key", async () => {
    const header = new Sealer(SECRET, credentialsTransitPurpose).seal(JSON.stringify({ openai: "sk-byok-batch" }), identity.workspace_id);
    const admitWithCredentials: Admit = async (ask) => ({ ...(await admitAll(ask)), credentials: header });
    const kept = await newBatch([chat("byok", "mine")]);
    const keeping = runnerWith(admitWithCredentials, "batch-runner-test-master-key-0123456789");
    await keeping.tick();
    await keeping.tick();
    const [job] = await lineJobs(kept.id);
    const stored = (await db.query<{ credentials: Record<string, { sealed?: string }> }>("SELECT credentials FROM jobs.jobs WHERE id = $1", [job!.id]))
      .rows[0]!;
    expect(stored.credentials.openai?.sealed).toEqual(expect.any(String));
    expect(JSON.stringify(stored.credentials)).not.toContain("sk-byok-batch");
    // Its work carries them sealed for transit, as any job's: they open to the workspace's key.
    await expect.poll(() => works.some((w) => w.job_id === job!.id)).toBe(true);
    const sent = works.find((w) => w.job_id === job!.id)!;
    expect(new CredentialsReader(SECRET).read(sent.credentials, identity.workspace_id)).toEqual({ openai: "sk-byok-batch" });
    await until(
      keeping,
      kept.id,
      ["completed"],
      completeAll(() => "{}"),
    );

    const refused = await newBatch([chat("byok-2", "mine")]);
    const before = settlements.length;
    const done = await until(runnerWith(admitWithCredentials), refused.id, ["completed"]);
    expect(done.request_counts).toEqual({ total: 1, completed: 0, failed: 1 });
    const [line] = (await files.content(done.error_file_id!, identity.workspace_id))!
      .toString("utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { response: { status_code: number; body: { error: { code: string } } } });
    expect(line?.response).toMatchObject({ status_code: 503, body: { error: { code: "provider_not_configured" } } });
    // What ingress reserved for the line is given back.
    await expect.poll(() => settlements.length - before).toBe(1);
  });

  it("then a line with a result Postgres cannot read as json, and a result stored apart, still reach the output file byte for byte", async () => {
    const batch = await newBatch([chat("surrogate", "x"), chat("stored", "y"), chat("fails", "z")]);
    const runner = runnerWith(admitAll);
    const lone = JSON.stringify({ text: "\ud800 alone", usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
    const big = JSON.stringify({ text: "stored apart", usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } });
    const done = await until(runner, batch.id, ["completed"], async (batchId) => {
      for (const job of await lineJobs(batchId)) {
        if (job.status !== "queued") continue;
        if (job.custom_id === "surrogate") await jobs.apply({ job_id: job.id, status: "completed", attempt: 1, at: 1, result: JSON.parse(lone) });
        if (job.custom_id === "stored") {
          expect(await jobs.storeResult(job.id, 1, identity.workspace_id, Buffer.from(big))).toBe(true);
          await jobs.apply({ job_id: job.id, status: "completed", attempt: 1, at: 1, result_stored: { bytes: Buffer.byteLength(big) } });
        }
        if (job.custom_id === "fails") {
          await jobs.apply({
            job_id: job.id,
            status: "failed",
            attempt: 1,
            at: 1,
            status_code: 429,
            error: { error: { message: "slow down", type: "rate_limit" } },
          });
        }
      }
    });
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    const output = (await files.content(done.output_file_id!, identity.workspace_id))!.toString("utf8");
    const [surrogate, stored] = output.trim().split("\n");
    expect(surrogate).toContain(`"body":${lone}`);
    expect(JSON.parse(stored!)).toMatchObject({ custom_id: "stored", response: { status_code: 200, body: JSON.parse(big) }, error: null });
    // The line Postgres cannot read counts nothing; the stored one counts.
    expect(done.usage).toMatchObject({ input_tokens: 7, output_tokens: 2, total_tokens: 9 });
    const errors = (await files.content(done.error_file_id!, identity.workspace_id))!.toString("utf8");
    expect(JSON.parse(errors)).toMatchObject({ custom_id: "fails", response: { status_code: 429, body: { error: { message: "slow down" } } }, error: null });
  });

  it("then a batch past its window runs nothing more and writes the lines it never ran as batch_expired, after those running finish", async () => {
    const batch = await newBatch([chat("e0", "a"), chat("e1", "b"), chat("e2", "c")]);
    const runner = runnerWith(async (ask) => ({ lines: [(await admitAll(ask)).lines[0]!, { kind: "wait", retry_after_ms: 60_000 }] }));
    await runner.tick();
    await db.query("UPDATE jobs.batches SET expires_at = now() - interval '1 second' WHERE id = $1", [batch.id]);
    expect((await lineJobs(batch.id)).map((j) => j.custom_id)).toEqual(["e0"]);
    // While e0 runs, the batch waits; once it has finished the batch expires.
    await runner.tick();
    expect((await batches.read(batch.id, identity.workspace_id))?.status).toBe("in_progress");
    const done = await until(
      runner,
      batch.id,
      ["expired"],
      completeAll(() => "{}"),
    );
    expect(done.expired_at).toBeInstanceOf(Date);
    expect(done.request_counts).toEqual({ total: 3, completed: 1, failed: 2 });
    const errors = (await files.content(done.error_file_id!, identity.workspace_id))!
      .toString("utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { custom_id: string; id: string; error: { code: string } });
    expect(errors.map((e) => [e.custom_id, e.error.code])).toEqual([
      ["e1", "batch_expired"],
      ["e2", "batch_expired"],
    ]);
    expect(errors[0]!.id).toMatch(/^batch_req_[0-9a-f]{32}$/);
  });

  it("then a line refused by its schema or its model never reaches ingress, and one refused by ingress is written with ingress's error", async () => {
    const batch = await newBatch([chat("good", "ok"), chat("no-model", "x", "nope"), chat("over-budget", "y")]);
    const asked: AdmissionRequest[] = [];
    const runner = runnerWith(async (ask) => {
      asked.push(ask);
      return {
        lines: [
          { kind: "admitted" },
          { kind: "refused", status: 429, error: { error: { message: "budget reached", type: "insufficient_quota", code: "budget_exceeded" } } },
        ],
      };
    });
    const done = await until(
      runner,
      batch.id,
      ["completed"],
      completeAll(() => "{}"),
    );
    expect(asked.map((a) => a.bodies.map((b) => (b.messages as { content: string }[])[0]!.content))).toEqual([["ok", "y"]]);
    const errors = (await files.content(done.error_file_id!, identity.workspace_id))!
      .toString("utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { custom_id: string; response: { status_code: number } });
    expect(errors.map((e) => [e.custom_id, e.response.status_code])).toEqual([
      ["no-model", 404],
      ["over-budget", 429],
    ]);
  });
});
