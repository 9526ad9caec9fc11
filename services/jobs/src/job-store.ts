import type { Identity, JobEvent, JobRequest, TokenTicket } from "@gw/contracts";
import { finishedJobStatuses, jobStatuses } from "@gw/contracts";
import type { CredentialChanged } from "@gw/contracts";
import type { Db, Queryable } from "@gw/db";
import { LRUCache } from "lru-cache";
import { ACTIVE_SQL as ACTIVE_BATCH } from "./batch-store";
import { GroupCommit } from "./group-commit";
import type { StoredCredentials } from "./job-credentials";

/** An event on its way into applyRows, with what apply worked out from it. */
interface EventToApply {
  event: JobEvent;
  finished: boolean;
  texts: { result: string | null; error: string | null };
}

/** What an applied event's row says after it. */
type AppliedRow = FinishedJob & { token_ticket: TokenTicket | null };

/** One row of `jobs.jobs`, as the service reads it. */
export interface JobRow {
  id: string;
  workspace_id: string;
  key_id: string;
  route: string;
  request: JobRequest;
  identity: Identity;
  /** The workspace's own provider credentials, sealed at rest; null once the job has finished. */
  credentials: StoredCredentials | null;
  /** A job from before migration 0004: its `x-gw-credentials` header as it arrived (see convertTransit). */
  transit_credentials: string | null;
  request_id: string | null;
  status: string;
  result: unknown;
  /** Set when the result is too large for the row's JSON and is held in `jobs.results` instead (its size in bytes). */
  result_bytes: number | null;
  error: unknown;
  attempts: number;
  upstream_id: string | null;
  request_hash: string | null;
  created_at: Date;
  completed_at: Date | null;
}

/** A finished job's poll answer, and whose it is (a research job's, bound to its key). */
interface FinishedPoll {
  job: PolledJob;
  route: string;
  workspaceId: string;
  /** The job's key, when the read that kept it knew it. */
  keyId: string | undefined;
  /** Roughly what it holds in memory: its JSON texts as UTF-16, and the object around them. */
  bytes: number;
}

/** Memory for finished jobs' poll answers in one jobs process. */
const FINISHED_POLLS_BYTES = 32 * 1024 * 1024;
/** A larger answer is read from Postgres each time: it would crowd out the many small ones. */
const FINISHED_POLL_MAX_BYTES = 256 * 1024;
const POLL_ENTRY_OVERHEAD_BYTES = 512;
/** Short next to any retention, long next to a client's polling interval. */
const FINISHED_POLL_TTL_MS = 60_000;
/** Retention compares Postgres's clock with `completed_at`; ours may run a little behind it. */
const CLOCK_MARGIN_MS = 5_000;

/** What a poll answers from, and no more: a job's request (up to the body limit) is never read for it. */
export type PolledJob = Pick<JobRow, "id" | "status" | "created_at" | "completed_at" | "result" | "error" | "result_bytes" | "attempts">;

/** A job as it finished: what its usage record needs. `request` is the stored request text. */
export interface FinishedJob {
  workspace_id: string;
  key_id: string;
  route: string;
  request_id: string | null;
  created_at: Date;
  completed_at: Date;
  request: string | null;
  /** Days to keep the job's bodies (detailed logs), or null. */
  capture_days: number | null;
  /** The batch the job is a line of, when it is one. */
  batch_id?: string | null;
}

/** A job failed by the sweep on its last attempt's deadline. */
export interface TimedOut {
  id: string;
  /** Its last attempt, which the failure supersedes. */
  attempts: number;
  job: FinishedJob;
}

export interface NewJob {
  id: string;
  route: string;
  identity: Identity;
  credentials?: StoredCredentials;
  request: JobRequest;
  requestId?: string;
  idempotencyKey?: string;
  requestHash: string;
  tokenTicket?: TokenTicket;
  captureDays?: number;
  /** A batch's line: its batch, its line number in the input file and the caller's `custom_id`. */
  batch?: { id: string; line: number; customId: string };
}

const COLUMNS = `id, workspace_id, key_id, route, request, identity, credentials, transit_credentials, request_id, status, result,
  result_bytes, error, attempts, upstream_id, request_hash, created_at, completed_at`;

/**
 * A row as the database gives it: request, result and error are the JSON text JSON.stringify wrote
 * (migration 0004: jsonb refuses \u0000 and lone surrogates, which text keeps escaped).
 */
type StoredRow = Omit<JobRow, "request" | "result" | "error"> & { request: string; result: string | null; error: string | null };

function fromStored<R extends StoredRow>(row: R): Omit<R, "request" | "result" | "error"> & Pick<JobRow, "request" | "result" | "error"> {
  return { ...row, request: JSON.parse(row.request) as JobRequest, ...answerOf(row) };
}

/** A job's result and error, read from their JSON text. */
function answerOf(row: { result: string | null; error: string | null }): Pick<JobRow, "result" | "error"> {
  return {
    result: row.result === null ? null : (JSON.parse(row.result) as unknown),
    error: row.error === null ? null : (JSON.parse(row.error) as unknown),
  };
}

/** JSON text for a text column; SQL NULL for nothing. */
const jsonText = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/** A text column cannot hold U+0000; a worker's status or an upstream's task id is an opaque token that can do without it. */
const withoutNul = (text: string): string => (text.includes("\u0000") ? text.replaceAll("\u0000", "") : text);

/** Set in the statement that finishes a job: its credentials are kept only while it can run. */
const FORGET_CREDENTIALS = "credentials = NULL, transit_credentials = NULL";
const OPEN = `status NOT IN ('${finishedJobStatuses.join("', '")}')`;

/** An idempotency key is honoured for a day, then released for reuse (issue 6, as Stripe does). */
const IDEMPOTENCY_WINDOW = "1 day";

export type CreateOutcome = { kind: "created"; job: JobRow } | { kind: "replayed"; job: JobRow } | { kind: "conflict"; job: JobRow };

/**
 * The jobs table, and every rule about how a row may change. Updates are single statements whose
 * WHERE clause is the rule, so two replicas (or a redelivered event) can never race a row into a
 * state the rules forbid.
 */
export class JobStore {
  private readonly inserts = new GroupCommit<NewJob, JobRow>((jobs) => this.insertRows(this.db, jobs));
  private readonly dispatched = new GroupCommit<{ id: string; attempt: number }, void>(async (marks) => {
    // In id order, as applied events lock the rows they share with these.
    const sorted = [...marks].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    await this.db.query(
      `UPDATE jobs.jobs j SET dispatched_at = now() FROM unnest($1::text[], $2::int[]) AS d(id, attempt)
       WHERE j.id = d.id AND j.attempts = d.attempt`,
      [sorted.map((m) => m.id), sorted.map((m) => m.attempt)],
    );
    return marks.map(() => undefined);
  });

  // Events applied together share one UPDATE (and its round trip and commit): see applyRows.
  private readonly applied = new GroupCommit<EventToApply, AppliedRow | undefined>((events) => this.applyRows(events));

  /**
   * Finished jobs as polls answer them. A finished row never changes again until retention removes
   * it, so a client polling for its result (or polling on after it) is answered without Postgres.
   */
  private readonly finishedPolls = new LRUCache<string, FinishedPoll>({ maxSize: FINISHED_POLLS_BYTES, sizeCalculation: (entry) => entry.bytes });

  constructor(
    private readonly db: Db,
    private readonly attemptTimeoutMs: number,
    /** How long finished jobs are kept: a cached poll never outlives its row. */
    private readonly retentionMs: number,
  ) {}

  /** One INSERT for all the jobs given, in their order; each is queued, on its first attempt. */
  async insertRows(tx: Queryable, jobs: NewJob[]): Promise<JobRow[]> {
    const column = <V>(pick: (job: NewJob) => V) => jobs.map(pick);
    const inserted = await tx.query<StoredRow>(
      `INSERT INTO jobs.jobs (id, workspace_id, key_id, route, request, identity, credentials, request_id, status, attempts,
         deadline_at, idempotency_key, request_hash, token_ticket, capture_days, batch_id, batch_line, custom_id)
       SELECT id, workspace_id, key_id, route, request, identity::jsonb, credentials::jsonb, request_id, '${jobStatuses.queued}', 1,
         now() + $1 * interval '1 millisecond', idempotency_key, request_hash, token_ticket::jsonb, capture_days, batch_id, batch_line, custom_id
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
         $12::text[], $13::int[], $14::text[], $15::int[], $16::text[])
         AS n(id, workspace_id, key_id, route, request, identity, credentials, request_id, idempotency_key, request_hash, token_ticket, capture_days,
           batch_id, batch_line, custom_id)
       RETURNING ${COLUMNS}`,
      [
        this.attemptTimeoutMs,
        column((j) => j.id),
        column((j) => j.identity.workspace_id),
        column((j) => j.identity.key_id),
        column((j) => j.route),
        column((j) => JSON.stringify(j.request)),
        column((j) => JSON.stringify(j.identity)),
        column((j) => (j.credentials ? JSON.stringify(j.credentials) : null)),
        column((j) => j.requestId ?? null),
        column((j) => j.idempotencyKey ?? null),
        column((j) => j.requestHash),
        column((j) => (j.tokenTicket ? JSON.stringify(j.tokenTicket) : null)),
        column((j) => j.captureDays ?? null),
        column((j) => j.batch?.id ?? null),
        column((j) => j.batch?.line ?? null),
        column((j) => j.batch?.customId ?? null),
      ],
    );
    const byId = new Map(inserted.rows.map((row) => [row.id, fromStored(row)]));
    return jobs.map((job) => {
      const row = byId.get(job.id);
      if (!row) throw new Error(`job ${job.id} was not written`);
      return row;
    });
  }

  /**
   * Writes the job before anything is published (the row is the outbox entry: `dispatched_at` stays
   * null until the work is on the bus). With an idempotency key already used by this key on this
   * route within a day, nothing is written: the earlier job comes back, or a conflict when the body
   * differs.
   */
  async create(job: NewJob): Promise<CreateOutcome> {
    const insert = async (tx: Queryable): Promise<JobRow> => (await this.insertRows(tx, [job]))[0]!;
    // Without a key, concurrent creations share one INSERT (and its round trip).
    if (!job.idempotencyKey) return { kind: "created", job: await this.inserts.run(job) };
    return this.db.transaction(async (tx) => {
      const key = [job.identity.key_id, job.route, job.idempotencyKey];
      // The lock serialises two concurrent first uses of one key: the second waits, then replays.
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [key.join("\n")]);
      const earlier = await tx.query<StoredRow & { fresh: boolean }>(
        `SELECT ${COLUMNS}, created_at > now() - interval '${IDEMPOTENCY_WINDOW}' AS fresh FROM jobs.jobs
         WHERE key_id = $1 AND route = $2 AND idempotency_key = $3`,
        key,
      );
      const found = earlier.rows[0];
      if (found?.fresh) {
        const { fresh: _fresh, ...row } = fromStored(found);
        return { kind: found.request_hash === job.requestHash ? "replayed" : "conflict", job: row };
      }
      if (found) await tx.query("UPDATE jobs.jobs SET idempotency_key = NULL WHERE id = $1", [found.id]);
      return { kind: "created", job: await insert(tx) };
    });
  }

  /** A job as its workspace (and, for research, its key) may see it; undefined for anyone else. */
  async read(id: string, route: string, workspaceId: string, keyId?: string): Promise<JobRow | undefined> {
    const row = await this.find<StoredRow>(COLUMNS, id, route, workspaceId, keyId);
    return row && fromStored(row);
  }

  /**
   * A job as a poll answers it, for its workspace (and, for research, its key): only the columns the
   * answer is made of, so a poll never reads the job's request, identity or credentials.
   */
  async poll(id: string, route: string, workspaceId: string, keyId?: string): Promise<PolledJob | undefined> {
    const cached = this.finishedPolls.get(id);
    // A poll bound to a key is answered from memory only when the entry knows the job's key.
    if (cached && cached.route === route && cached.workspaceId === workspaceId && (keyId === undefined || cached.keyId === keyId)) return cached.job;
    type Stored = Omit<PolledJob, "result" | "error"> & { result: string | null; error: string | null };
    const row = await this.find<Stored>("id, status, created_at, completed_at, result, error, result_bytes, attempts", id, route, workspaceId, keyId);
    if (!row) return undefined;
    const job = { ...row, ...answerOf(row) };
    this.rememberFinished(job, row, route, workspaceId, keyId);
    return job;
  }

  /** Keeps a finished job's poll answer (a small one held in the row) while its row surely exists. */
  private rememberFinished(
    job: PolledJob,
    text: { result: string | null; error: string | null },
    route: string,
    workspaceId: string,
    keyId: string | undefined,
  ): void {
    if (!job.completed_at || job.result_bytes !== null || !finishedJobStatuses.includes(job.status)) return;
    const bytes = POLL_ENTRY_OVERHEAD_BYTES + 2 * ((text.result?.length ?? 0) + (text.error?.length ?? 0));
    if (bytes > FINISHED_POLL_MAX_BYTES) return;
    const ttl = Math.min(FINISHED_POLL_TTL_MS, job.completed_at.getTime() + this.retentionMs - CLOCK_MARGIN_MS - Date.now());
    if (ttl > 0) this.finishedPolls.set(job.id, { job, route, workspaceId, keyId, bytes }, { ttl });
  }

  /** One job's `columns`, if it is the workspace's (and, given a key, that key's). */
  private async find<R extends object>(columns: string, id: string, route: string, workspaceId: string, keyId?: string): Promise<R | undefined> {
    const params = [id, route, workspaceId, ...(keyId ? [keyId] : [])];
    const result = await this.db.query<R>(
      `SELECT ${columns} FROM jobs.jobs WHERE id = $1 AND route = $2 AND workspace_id = $3 ${keyId ? "AND key_id = $4" : ""}`,
      params,
    );
    return result.rows[0];
  }

  /** Notes that an attempt's work is on the bus; concurrent notes share one UPDATE. */
  markDispatched(id: string, attempt: number): Promise<void> {
    return this.dispatched.run({ id, attempt });
  }

  /**
   * After a restart on a bus that keeps nothing (the in-process bus of the embedded default), every
   * unfinished job's work is gone with the old process: marks them all to be published again.
   */
  async markAllUndispatched(): Promise<number> {
    const result = await this.db.query(`UPDATE jobs.jobs SET dispatched_at = NULL WHERE ${OPEN} AND dispatched_at IS NOT NULL`);
    return result.rowCount;
  }

  /** Unfinished jobs whose work never reached the bus (a publish that failed, a crash in between). */
  async undispatched(olderThanMs: number, limit: number): Promise<JobRow[]> {
    const result = await this.db.query<StoredRow>(
      `SELECT ${COLUMNS} FROM jobs.jobs
       WHERE dispatched_at IS NULL AND ${OPEN} AND created_at < now() - $1 * interval '1 millisecond'
       ORDER BY created_at LIMIT $2`,
      [olderThanMs, limit],
    );
    return result.rows.map(fromStored);
  }

  /**
   * Jobs past their deadline with attempts left start a new attempt: queued again, undispatched, with
   * a new deadline. SKIP LOCKED lets several jobs replicas sweep at once without taking the same row.
   */
  async retryOverdue(maxAttempts: number, limit: number): Promise<JobRow[]> {
    const result = await this.db.query<StoredRow>(
      `UPDATE jobs.jobs SET attempts = attempts + 1, status = '${jobStatuses.queued}', dispatched_at = NULL, updated_at = now(),
         deadline_at = now() + $1 * interval '1 millisecond'
       WHERE id IN (SELECT id FROM jobs.jobs WHERE ${OPEN} AND deadline_at < now() AND attempts < $2
                    ORDER BY deadline_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING ${COLUMNS}`,
      [this.attemptTimeoutMs, maxAttempts, limit],
    );
    return result.rows.map(fromStored);
  }

  /** Jobs past their deadline on their last attempt fail, with an error in the route's envelope. */
  async failOverdue(maxAttempts: number, errorFor: (route: string, attempts: number) => unknown, limit: number): Promise<TimedOut[]> {
    const overdue = await this.db.query<{ id: string; route: string; attempts: number }>(
      `SELECT id, route, attempts FROM jobs.jobs WHERE ${OPEN} AND deadline_at < now() AND attempts >= $1 ORDER BY deadline_at LIMIT $2`,
      [maxAttempts, limit],
    );
    const failed: TimedOut[] = [];
    for (const row of overdue.rows) {
      const done = await this.db.query<FinishedJob>(
        `UPDATE jobs.jobs SET status = '${jobStatuses.failed}', error = $2, completed_at = now(), updated_at = now(), deadline_at = NULL,
           ${FORGET_CREDENTIALS}
         WHERE id = $1 AND ${OPEN} AND deadline_at < now()
         RETURNING workspace_id, key_id, route, request_id, created_at, completed_at, request`,
        [row.id, jsonText(errorFor(row.route, row.attempts))],
      );
      const job = done.rows[0];
      if (job) failed.push({ id: row.id, attempts: row.attempts, job });
    }
    return failed;
  }

  /**
   * Applies a worker's event. A finished job never changes again; a finished status always wins over
   * a running one; a running status replaces another only when it was reported later. An event of an
   * attempt the job has moved past (a deadline retry) changes nothing. A running status pushes the
   * deadline out: the attempt is alive. Returns whether the row changed and, when
   * this event finished the job, the token reservation to settle.
   */
  async apply(event: JobEvent): Promise<{ changed: boolean; ticket?: TokenTicket; finished?: FinishedJob }> {
    const finished = finishedJobStatuses.includes(event.status);
    const texts = { result: jsonText(event.result), error: jsonText(event.error) };
    const row = await this.applied.run({ event, finished, texts });
    if (!row) return { changed: false };
    const { token_ticket, ...job } = row;
    // The finish as a poll answers it, for the polls to come (a waiting one first): the event is
    // this process's own copy of what the row now holds. A batch's lines are read through its
    // output file, never polled.
    if (finished && job.completed_at && !job.batch_id) {
      const polled = {
        id: event.job_id,
        status: event.status,
        created_at: job.created_at,
        completed_at: job.completed_at,
        result: event.result ?? null,
        error: event.error ?? null,
        result_bytes: event.result_stored?.bytes ?? null,
        attempts: event.attempt,
      };
      this.rememberFinished(polled, { result: texts.result, error: texts.error }, job.route, job.workspace_id, job.key_id);
    }
    return { changed: true, ...(finished && token_ticket ? { ticket: token_ticket } : {}), ...(finished ? { finished: job } : {}) };
  }

  /**
   * One UPDATE for the events given, each under apply's rules, answering the row each changed (or
   * undefined) in their order. A job named twice is updated once per statement (Postgres would apply
   * only one of two source rows that meet the same row), so a second event of a job goes in a
   * statement after the first, in arrival order, as if each had been applied alone; then all of
   * them run in one transaction, so that a failure leaves none applied and each can be tried again
   * alone (an event whose finish had been committed would otherwise change nothing the second time,
   * and its settlement and waiting polls would be lost).
   */
  private async applyRows(events: readonly EventToApply[]): Promise<(AppliedRow | undefined)[]> {
    const ids = new Set(events.map((e) => e.event.job_id));
    if (ids.size === events.length) return this.applyRounds(this.db, events);
    return this.db.transaction((tx) => this.applyRounds(tx, events));
  }

  private async applyRounds(db: Queryable, events: readonly EventToApply[]): Promise<(AppliedRow | undefined)[]> {
    const answers = new Array<AppliedRow | undefined>(events.length);
    let pending = events.map((_, k) => k);
    while (pending.length > 0) {
      const ids = new Set<string>();
      const round: number[] = [];
      const later: number[] = [];
      for (const k of pending) {
        const id = events[k]!.event.job_id;
        if (ids.has(id)) later.push(k);
        else {
          ids.add(id);
          round.push(k);
        }
      }
      // In id order, as the dispatch marks, so that two such statements updating the same rows (two
      // replicas, or two groups of one) lock them in the same order.
      round.sort((x, y) => (events[x]!.event.job_id < events[y]!.event.job_id ? -1 : 1));
      const column = <V>(pick: (e: EventToApply) => V) => round.map((k) => pick(events[k]!));
      const result = await db.query<AppliedRow & { k: number }>(
        `UPDATE jobs.jobs j SET status = e.e_status, status_at = e.e_at, updated_at = now(),
           result = CASE WHEN e.e_finished THEN e.e_result ELSE j.result END,
           error = CASE WHEN e.e_finished THEN e.e_error ELSE j.error END,
           credentials = CASE WHEN e.e_finished THEN NULL ELSE j.credentials END,
           transit_credentials = CASE WHEN e.e_finished THEN NULL ELSE j.transit_credentials END,
           completed_at = CASE WHEN e.e_finished THEN now() ELSE j.completed_at END,
           deadline_at = CASE WHEN e.e_finished THEN NULL ELSE now() + $1 * interval '1 millisecond' END,
           upstream_id = COALESCE(e.e_upstream_id, j.upstream_id),
           result_bytes = CASE WHEN e.e_finished THEN e.e_result_bytes ELSE j.result_bytes END,
           status_code = CASE WHEN e.e_finished THEN e.e_status_code ELSE j.status_code END
         FROM unnest($2::text[], $3::text[], $4::int8[], $5::boolean[], $6::text[], $7::text[], $8::text[], $9::int[], $10::int[], $11::int[])
           WITH ORDINALITY AS e(e_id, e_status, e_at, e_finished, e_result, e_error, e_upstream_id, e_attempt, e_result_bytes, e_status_code, e_k)
         WHERE j.id = e.e_id AND j.attempts = e.e_attempt AND j.${OPEN} AND (e.e_finished OR COALESCE(j.status_at, 0) <= e.e_at)
           AND (e.e_result_bytes IS NULL OR EXISTS (SELECT 1 FROM jobs.results r WHERE r.job_id = e.e_id AND r.attempt = e.e_attempt))
         RETURNING e.e_k::int4 AS k, j.token_ticket, j.workspace_id, j.key_id, j.route, j.request_id, j.created_at, j.completed_at,
           j.capture_days, j.batch_id, CASE WHEN e.e_finished THEN j.request ELSE NULL END AS request`,
        [
          this.attemptTimeoutMs,
          column((e) => e.event.job_id),
          column((e) => withoutNul(e.event.status)),
          column((e) => e.event.at),
          column((e) => e.finished),
          column((e) => e.texts.result),
          column((e) => e.texts.error),
          column((e) => (e.event.upstream_id === undefined ? null : withoutNul(e.event.upstream_id))),
          column((e) => e.event.attempt),
          column((e) => e.event.result_stored?.bytes ?? null),
          column((e) => e.event.status_code ?? null),
        ],
      );
      for (const { k, ...row } of result.rows) answers[round[k - 1]!] = row;
      pending = later;
    }
    return answers;
  }

  /**
   * Keeps a result too large for a bus message, for the attempt that made it: only while that
   * attempt is the job's current one and the job is open, and only for the job's own workspace.
   * Returns whether it was kept.
   */
  async storeResult(id: string, attempt: number, workspaceId: string, body: Buffer): Promise<boolean> {
    const result = await this.db.query(
      `INSERT INTO jobs.results (job_id, attempt, body)
       SELECT id, attempts, $4 FROM jobs.jobs WHERE id = $1 AND attempts = $2 AND workspace_id = $3 AND ${OPEN}
       ON CONFLICT (job_id, attempt) DO UPDATE SET body = EXCLUDED.body, created_at = now()`,
      [id, attempt, workspaceId, body],
    );
    return result.rowCount > 0;
  }

  /** A slice of a finished job's stored result (`from` counts from 0). */
  async resultSlice(id: string, attempt: number, from: number, length: number): Promise<Buffer> {
    const result = await this.db.query<{ part: Buffer | null }>(
      "SELECT substring(body FROM $3 FOR $4) AS part FROM jobs.results WHERE job_id = $1 AND attempt = $2",
      [id, attempt, from + 1, length],
    );
    const part = result.rows[0]?.part;
    if (!part) throw new Error(`the stored result of ${id} (attempt ${attempt}) is missing`);
    return part;
  }

  /** An open job's request as stored (JSON text), for a worker whose work message could not carry it. */
  async requestText(id: string, workspaceId: string): Promise<string | undefined> {
    const result = await this.db.query<{ request: string }>(`SELECT request FROM jobs.jobs WHERE id = $1 AND workspace_id = $2 AND ${OPEN}`, [id, workspaceId]);
    return result.rows[0]?.request;
  }

  /** A finished job's record fields, for publishing its usage record again (a redelivered final event). */
  async finishedJob(id: string): Promise<FinishedJob | undefined> {
    const result = await this.db.query<FinishedJob>(
      `SELECT workspace_id, key_id, route, request_id, created_at, completed_at, request, capture_days FROM jobs.jobs
        WHERE id = $1 AND status IN ('${finishedJobStatuses.join("', '")}') AND completed_at IS NOT NULL`,
      [id],
    );
    return result.rows[0];
  }

  /**
   * A workspace's credential changed (ingress's `credentials.changed`): every unfinished job of the
   * workspace takes the change, unless it already holds a newer one, so its later attempts run with
   * the workspace's current credentials. Returns how many jobs took it.
   */
  async applyCredentialChange(change: CredentialChanged): Promise<number> {
    const entry = { ...(change.sealed ? { sealed: change.sealed } : {}), version: change.version };
    const result = await this.db.query(
      `UPDATE jobs.jobs SET credentials = jsonb_set(COALESCE(credentials, '{}'::jsonb), ARRAY[$2::text], $3::jsonb)
       WHERE workspace_id = $1 AND ${OPEN} AND COALESCE((credentials -> $2::text ->> 'version')::bigint, -1) < $4`,
      [change.workspace_id, change.provider, JSON.stringify(entry), change.version],
    );
    return result.rowCount;
  }

  /** Unfinished jobs from before migration 0004, still holding the header they arrived with. */
  async withTransitCredentials(limit: number): Promise<{ id: string; workspace_id: string; transit_credentials: string }[]> {
    const result = await this.db.query<{ id: string; workspace_id: string; transit_credentials: string }>(
      `SELECT id, workspace_id, transit_credentials FROM jobs.jobs WHERE transit_credentials IS NOT NULL AND credentials IS NULL AND ${OPEN}
       ORDER BY id LIMIT $1`,
      [limit],
    );
    return result.rows;
  }

  /** Replaces such a header by the credentials sealed at rest (unless the job has changed since). */
  async convertTransit(id: string, header: string, credentials: StoredCredentials): Promise<boolean> {
    const result = await this.db.query(
      `UPDATE jobs.jobs SET credentials = $3::jsonb, transit_credentials = NULL WHERE id = $1 AND transit_credentials = $2 AND credentials IS NULL`,
      [id, header, JSON.stringify(credentials)],
    );
    return result.rowCount > 0;
  }

  /** Removes finished jobs older than the retention time; returns how many went. */
  async removeFinished(retentionMs: number, limit: number): Promise<number> {
    const result = await this.db.query(
      // A batch's lines stay while their batch runs: its output file is written from them.
      `DELETE FROM jobs.jobs WHERE id IN (
         SELECT j.id FROM jobs.jobs j WHERE j.completed_at < now() - $1 * interval '1 millisecond'
           AND (j.batch_id IS NULL OR NOT EXISTS (
             SELECT 1 FROM jobs.batches b WHERE b.id = j.batch_id AND b.${ACTIVE_BATCH}))
         LIMIT $2)`,
      [retentionMs, limit],
    );
    return result.rowCount;
  }
}
