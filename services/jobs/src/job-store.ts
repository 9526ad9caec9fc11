import type { Identity, JobEvent, JobRequest, TokenTicket } from "@gw/contracts";
import { finishedJobStatuses, jobStatuses } from "@gw/contracts";
import type { Db, Queryable } from "@gw/db";

/** One row of `jobs.jobs`, as the service reads it. */
export interface JobRow {
  id: string;
  workspace_id: string;
  key_id: string;
  route: string;
  request: JobRequest;
  identity: Identity;
  credentials: string | null;
  request_id: string | null;
  status: string;
  result: unknown;
  error: unknown;
  attempts: number;
  upstream_id: string | null;
  request_hash: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export interface NewJob {
  id: string;
  route: string;
  identity: Identity;
  credentials?: string;
  request: JobRequest;
  requestId?: string;
  idempotencyKey?: string;
  requestHash: string;
  tokenTicket?: TokenTicket;
}

const COLUMNS = `id, workspace_id, key_id, route, request, identity, credentials, request_id, status, result, error,
  attempts, upstream_id, request_hash, created_at, completed_at`;
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
  constructor(
    private readonly db: Db,
    private readonly attemptTimeoutMs: number,
  ) {}

  /**
   * Writes the job before anything is published (the row is the outbox entry: `dispatched_at` stays
   * null until the work is on the bus). With an idempotency key already used by this key on this
   * route within a day, nothing is written: the earlier job comes back, or a conflict when the body
   * differs.
   */
  async create(job: NewJob): Promise<CreateOutcome> {
    const insert = (tx: Queryable) =>
      tx.query<JobRow>(
        `INSERT INTO jobs.jobs (id, workspace_id, key_id, route, request, identity, credentials, request_id, status, attempts,
           deadline_at, idempotency_key, request_hash, token_ticket)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '${jobStatuses.queued}', 1, now() + $9 * interval '1 millisecond', $10, $11, $12)
         RETURNING ${COLUMNS}`,
        [
          job.id,
          job.identity.workspace_id,
          job.identity.key_id,
          job.route,
          JSON.stringify(job.request),
          JSON.stringify(job.identity),
          job.credentials ?? null,
          job.requestId ?? null,
          this.attemptTimeoutMs,
          job.idempotencyKey ?? null,
          job.requestHash,
          job.tokenTicket ? JSON.stringify(job.tokenTicket) : null,
        ],
      );
    if (!job.idempotencyKey) return { kind: "created", job: (await insert(this.db)).rows[0]! };
    return this.db.transaction(async (tx) => {
      const key = [job.identity.key_id, job.route, job.idempotencyKey];
      // The lock serialises two concurrent first uses of one key: the second waits, then replays.
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [key.join("\n")]);
      const earlier = await tx.query<JobRow & { fresh: boolean }>(
        `SELECT ${COLUMNS}, created_at > now() - interval '${IDEMPOTENCY_WINDOW}' AS fresh FROM jobs.jobs
         WHERE key_id = $1 AND route = $2 AND idempotency_key = $3`,
        key,
      );
      const found = earlier.rows[0];
      if (found?.fresh) return { kind: found.request_hash === job.requestHash ? "replayed" : "conflict", job: found };
      if (found) await tx.query("UPDATE jobs.jobs SET idempotency_key = NULL WHERE id = $1", [found.id]);
      return { kind: "created", job: (await insert(tx)).rows[0]! };
    });
  }

  /** A job as its workspace (and, for research, its key) may see it; undefined for anyone else. */
  async read(id: string, route: string, workspaceId: string, keyId?: string): Promise<JobRow | undefined> {
    const params = [id, route, workspaceId, ...(keyId ? [keyId] : [])];
    const result = await this.db.query<JobRow>(
      `SELECT ${COLUMNS} FROM jobs.jobs WHERE id = $1 AND route = $2 AND workspace_id = $3 ${keyId ? "AND key_id = $4" : ""}`,
      params,
    );
    return result.rows[0];
  }

  async markDispatched(id: string, attempt: number): Promise<void> {
    await this.db.query("UPDATE jobs.jobs SET dispatched_at = now() WHERE id = $1 AND attempts = $2", [id, attempt]);
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
    const result = await this.db.query<JobRow>(
      `SELECT ${COLUMNS} FROM jobs.jobs
       WHERE dispatched_at IS NULL AND ${OPEN} AND created_at < now() - $1 * interval '1 millisecond'
       ORDER BY created_at LIMIT $2`,
      [olderThanMs, limit],
    );
    return result.rows;
  }

  /**
   * Jobs past their deadline with attempts left start a new attempt: queued again, undispatched, with
   * a new deadline. SKIP LOCKED lets several jobs replicas sweep at once without taking the same row.
   */
  async retryOverdue(maxAttempts: number, limit: number): Promise<JobRow[]> {
    const result = await this.db.query<JobRow>(
      `UPDATE jobs.jobs SET attempts = attempts + 1, status = '${jobStatuses.queued}', dispatched_at = NULL, updated_at = now(),
         deadline_at = now() + $1 * interval '1 millisecond'
       WHERE id IN (SELECT id FROM jobs.jobs WHERE ${OPEN} AND deadline_at < now() AND attempts < $2
                    ORDER BY deadline_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING ${COLUMNS}`,
      [this.attemptTimeoutMs, maxAttempts, limit],
    );
    return result.rows;
  }

  /** Jobs past their deadline on their last attempt fail, with an error in the route's envelope. */
  async failOverdue(maxAttempts: number, errorFor: (route: string, attempts: number) => unknown, limit: number): Promise<string[]> {
    const overdue = await this.db.query<{ id: string; route: string; attempts: number }>(
      `SELECT id, route, attempts FROM jobs.jobs WHERE ${OPEN} AND deadline_at < now() AND attempts >= $1 ORDER BY deadline_at LIMIT $2`,
      [maxAttempts, limit],
    );
    const failed: string[] = [];
    for (const row of overdue.rows) {
      const done = await this.db.query(
        `UPDATE jobs.jobs SET status = '${jobStatuses.failed}', error = $2, completed_at = now(), updated_at = now(), deadline_at = NULL
         WHERE id = $1 AND ${OPEN} AND deadline_at < now()`,
        [row.id, JSON.stringify(errorFor(row.route, row.attempts))],
      );
      if (done.rowCount > 0) failed.push(row.id);
    }
    return failed;
  }

  /**
   * Applies a worker's event. A finished job never changes again; a finished status always wins over
   * a running one; a running status replaces another only when it was reported later. A running
   * status pushes the deadline out: the attempt is alive. Returns whether the row changed and, when
   * this event finished the job, the token reservation to settle.
   */
  async apply(event: JobEvent): Promise<{ changed: boolean; ticket?: TokenTicket }> {
    const finished = finishedJobStatuses.includes(event.status);
    const result = await this.db.query(
      `UPDATE jobs.jobs SET status = $2, status_at = $3, updated_at = now(),
         result = CASE WHEN $4::boolean THEN $5::jsonb ELSE result END,
         error = CASE WHEN $4::boolean THEN $6::jsonb ELSE error END,
         completed_at = CASE WHEN $4::boolean THEN now() ELSE completed_at END,
         deadline_at = CASE WHEN $4::boolean THEN NULL ELSE now() + $7 * interval '1 millisecond' END,
         upstream_id = COALESCE($8, upstream_id)
       WHERE id = $1 AND ${OPEN} AND ($4::boolean OR COALESCE(status_at, 0) <= $3)
       RETURNING token_ticket`,
      [
        event.job_id,
        event.status,
        event.at,
        finished,
        event.result === undefined ? null : JSON.stringify(event.result),
        event.error === undefined ? null : JSON.stringify(event.error),
        this.attemptTimeoutMs,
        event.upstream_id ?? null,
      ],
    );
    const row = result.rows[0] as { token_ticket: TokenTicket | null } | undefined;
    return { changed: row !== undefined, ...(finished && row?.token_ticket ? { ticket: row.token_ticket } : {}) };
  }

  /** Removes finished jobs older than the retention time; returns how many went. */
  async removeFinished(retentionMs: number, limit: number): Promise<number> {
    const result = await this.db.query(
      `DELETE FROM jobs.jobs WHERE id IN (SELECT id FROM jobs.jobs WHERE completed_at < now() - $1 * interval '1 millisecond' LIMIT $2)`,
      [retentionMs, limit],
    );
    return result.rowCount;
  }
}
