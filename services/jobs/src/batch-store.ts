import { randomBytes } from "node:crypto";
import {
  type Batch,
  type BatchError,
  type BatchStatus,
  type BatchUsage,
  DEFAULT_FILE_EXPIRY_SECONDS,
  finishedJobStatuses,
  type Identity,
  jobStatuses,
} from "@gw/contracts";
import type { Db, Queryable } from "@gw/db";
import { newFileId } from "./file-store";

/** One row of `jobs.batches`, as the service reads it. */
export interface BatchRow {
  id: string;
  workspace_id: string;
  key_id: string;
  identity: Identity;
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  metadata: Record<string, string> | null;
  output_expires_after: number | null;
  status: BatchStatus;
  errors: BatchError[] | null;
  total: number;
  next_line: number;
  output_file_id: string | null;
  error_file_id: string | null;
  request_counts: { total: number; completed: number; failed: number } | null;
  usage: BatchUsage | null;
  request_id: string | null;
  /** The token of the claim holding the batch now, if any (see BatchStore.claim). */
  lease_token: string | null;
  created_at: Date;
  in_progress_at: Date | null;
  expires_at: Date;
  finalizing_at: Date | null;
  completed_at: Date | null;
  failed_at: Date | null;
  expired_at: Date | null;
  cancelling_at: Date | null;
  cancelled_at: Date | null;
}

export interface NewBatch {
  identity: Identity;
  endpoint: string;
  inputFileId: string;
  completionWindow: string;
  metadata?: Record<string, string> | null;
  outputExpiresAfter?: number;
  requestId?: string;
}

/** One line of an input file, as validation read it. */
export interface BatchLine {
  line: number;
  custom_id: string;
  body: string;
}

/** A line that will not run: its answer (an error envelope and the status it came with) for the error file. */
export interface RefusedLine {
  line: number;
  customId: string;
  statusCode: number;
  error: unknown;
}

export type CancelOutcome = { kind: "ok"; batch: BatchRow } | { kind: "finished"; batch: BatchRow } | { kind: "missing" };

/** The statuses in which a batch still has work for the runner. */
const ACTIVE: BatchStatus[] = ["validating", "in_progress", "finalizing", "cancelling"];
/** A batch that is not over, as SQL on its `status` column. */
export const ACTIVE_SQL = `status IN ('${ACTIVE.join("', '")}')`;
const OPEN_JOB = `status NOT IN ('${finishedJobStatuses.join("', '")}')`;
/** How long a runner holds a batch before another jobs replica may take it (renewed every step). */
export const BATCH_LEASE_MS = 10_000;

const unix = (date: Date | null | undefined): number | undefined => (date ? Math.floor(date.getTime() / 1000) : undefined);

/** The batch in OpenAI's shape; `counts` are the live ones while it runs. */
export function batchObject(row: BatchRow, counts?: { completed: number; failed: number }): Batch {
  const requestCounts = row.request_counts ?? { total: row.total, completed: counts?.completed ?? 0, failed: counts?.failed ?? 0 };
  return {
    id: row.id,
    object: "batch",
    endpoint: row.endpoint,
    ...(row.errors ? { errors: { object: "list", data: row.errors } } : {}),
    input_file_id: row.input_file_id,
    completion_window: row.completion_window,
    status: row.status,
    ...(row.output_file_id ? { output_file_id: row.output_file_id } : {}),
    ...(row.error_file_id ? { error_file_id: row.error_file_id } : {}),
    created_at: unix(row.created_at)!,
    in_progress_at: unix(row.in_progress_at),
    expires_at: unix(row.expires_at),
    finalizing_at: unix(row.finalizing_at),
    completed_at: unix(row.completed_at),
    failed_at: unix(row.failed_at),
    expired_at: unix(row.expired_at),
    cancelling_at: unix(row.cancelling_at),
    cancelled_at: unix(row.cancelled_at),
    request_counts: requestCounts,
    ...(row.usage ? { usage: row.usage } : {}),
    metadata: row.metadata,
  };
}

/**
 * A finished line as a line of its output or error file, built in SQL from the job row so that a
 * batch's files are assembled in Postgres, never held whole by this process. A result or an error
 * is the JSON text JSON.stringify wrote, spliced in unchanged.
 */
const OUTPUT_LINE = `'{"id":' || to_json(j.request_id)::text || ',"custom_id":' || to_json(j.custom_id)::text || ',"response":'
  || CASE WHEN j.status = '${jobStatuses.completed}' THEN
       '{"status_code":' || COALESCE(j.status_code, 200) || ',"request_id":' || to_json(j.request_id)::text || ',"body":'
         || COALESCE(j.result, convert_from(r.body, 'UTF8'), 'null') || '},"error":null}'
     WHEN j.status_code IS NOT NULL THEN
       '{"status_code":' || j.status_code || ',"request_id":' || to_json(j.request_id)::text || ',"body":' || COALESCE(j.error, 'null') || '},"error":null}'
     ELSE 'null,"error":' || json_build_object(
       'code', COALESCE(jobs.json_part(j.error, 'error', 'code') #>> '{}', jobs.json_part(j.error, 'error', 'type') #>> '{}', 'failed'),
       'message', COALESCE(jobs.json_part(j.error, 'error', 'message') #>> '{}', 'The request failed'))::text || '}'
   END`;

/** Lines a part of an output or error file holds: a part stays far below Postgres's 1 GB bound. */
const LINES_PER_PART = 1_000;

/**
 * Every line of a batch ($1) as a line of its output or error file (`ok`, `text`), with the usage
 * its answer reported: the line jobs, and the lines never run as $2/$3 errors.
 */
const EVERY_LINE = `done AS (
    SELECT j.batch_line AS line, j.status = '${jobStatuses.completed}' AS ok, ${OUTPUT_LINE} AS text,
      CASE WHEN j.status = '${jobStatuses.completed}' THEN jobs.json_part(COALESCE(j.result, convert_from(r.body, 'UTF8')), 'usage') END AS usage
    FROM jobs.jobs j LEFT JOIN jobs.results r ON r.job_id = j.id AND r.attempt = j.attempts
    WHERE j.batch_id = $1
  ), never AS (
    SELECT l.line, false AS ok,
      '{"id":' || to_json('batch_req_' || md5($1 || l.line))::text || ',"custom_id":' || to_json(l.custom_id)::text
        || ',"response":null,"error":' || json_build_object('code', $2::text, 'message', $3::text)::text || '}' AS text,
      NULL::jsonb AS usage
    FROM jobs.batch_lines l WHERE l.batch_id = $1 AND NOT EXISTS (SELECT 1 FROM done WHERE done.line = l.line)
  ), every AS (SELECT * FROM done UNION ALL SELECT * FROM never)`;

/**
 * `jobs.batches` and `jobs.batch_lines`: a batch's state, and every rule about how it may change, as
 * single statements or transactions guarded by what they expect (the runner's lease, the line it
 * starts from), so two replicas can never move one batch twice.
 */
export class BatchStore {
  constructor(private readonly db: Db) {}

  async create(batch: NewBatch): Promise<BatchRow> {
    const result = await this.db.query<BatchRow>(
      `INSERT INTO jobs.batches (id, workspace_id, key_id, identity, endpoint, input_file_id, completion_window, metadata, output_expires_after,
         request_id, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + interval '24 hours') RETURNING *`,
      [
        `batch_${randomBytes(16).toString("hex")}`,
        batch.identity.workspace_id,
        batch.identity.key_id,
        JSON.stringify(batch.identity),
        batch.endpoint,
        batch.inputFileId,
        batch.completionWindow,
        batch.metadata ? JSON.stringify(batch.metadata) : null,
        batch.outputExpiresAfter ?? null,
        batch.requestId ?? null,
      ],
    );
    return result.rows[0]!;
  }

  async read(id: string, workspaceId: string): Promise<BatchRow | undefined> {
    const result = await this.db.query<BatchRow>("SELECT * FROM jobs.batches WHERE id = $1 AND workspace_id = $2", [id, workspaceId]);
    return result.rows[0];
  }

  /** How many of each running batch's lines have finished, and how (for its `request_counts`). */
  async counts(ids: string[]): Promise<Map<string, { completed: number; failed: number }>> {
    const counted = new Map<string, { completed: number; failed: number }>();
    if (ids.length === 0) return counted;
    const result = await this.db.query<{ batch_id: string; completed: string; failed: string }>(
      `SELECT batch_id, count(*) FILTER (WHERE status = '${jobStatuses.completed}') AS completed,
              count(*) FILTER (WHERE status = '${jobStatuses.failed}') AS failed
       FROM jobs.jobs WHERE batch_id = ANY($1::text[]) GROUP BY batch_id`,
      [ids],
    );
    for (const row of result.rows) counted.set(row.batch_id, { completed: Number(row.completed), failed: Number(row.failed) });
    return counted;
  }

  /** How many of a batch's lines are running (queued or in a worker's hands). */
  async openLines(id: string): Promise<number> {
    const result = await this.db.query<{ open: string }>(`SELECT count(*) AS open FROM jobs.jobs WHERE batch_id = $1 AND ${OPEN_JOB}`, [id]);
    return Number(result.rows[0]?.open ?? 0);
  }

  /** A page of the workspace's batches, newest first; `after` is the last id of the previous page. */
  async list(workspaceId: string, limit: number, after?: string): Promise<{ rows: BatchRow[]; hasMore: boolean }> {
    const params: unknown[] = [workspaceId, limit + 1];
    let cursor = "";
    if (after !== undefined) {
      params.push(after);
      cursor = "AND (created_at, id) < (SELECT created_at, id FROM jobs.batches WHERE id = $3 AND workspace_id = $1)";
    }
    const result = await this.db.query<BatchRow>(
      `SELECT * FROM jobs.batches WHERE workspace_id = $1 ${cursor} ORDER BY created_at DESC, id DESC LIMIT $2`,
      params,
    );
    return { rows: result.rows.slice(0, limit), hasMore: result.rows.length > limit };
  }

  /**
   * Cancels a batch that has not finished: no more of its lines are admitted, and it becomes
   * `cancelled` once those running have finished. Asking again answers the batch as it is.
   */
  async cancel(id: string, workspaceId: string): Promise<CancelOutcome> {
    const result = await this.db.query<BatchRow>(
      `UPDATE jobs.batches SET status = 'cancelling', cancelling_at = now(), wake_at = NULL
       WHERE id = $1 AND workspace_id = $2 AND status IN ('validating', 'in_progress') RETURNING *`,
      [id, workspaceId],
    );
    if (result.rows[0]) return { kind: "ok", batch: result.rows[0] };
    const batch = await this.read(id, workspaceId);
    if (!batch) return { kind: "missing" };
    return batch.status === "cancelling" || batch.status === "cancelled" ? { kind: "ok", batch } : { kind: "finished", batch };
  }

  /**
   * Takes up to `limit` batches with work due, for BATCH_LEASE_MS, under a token of this claim:
   * SKIP LOCKED and the lease let several jobs replicas run batches at once without taking the same
   * one, and every change a step makes names the token, so a step whose lease lapsed (and was taken
   * by another replica) changes nothing.
   */
  async claim(limit: number): Promise<BatchRow[]> {
    const result = await this.db.query<BatchRow>(
      `UPDATE jobs.batches SET lease_until = now() + $2 * interval '1 millisecond', lease_token = $3
       WHERE id IN (SELECT id FROM jobs.batches WHERE ${ACTIVE_SQL} AND (wake_at IS NULL OR wake_at <= now())
                      AND (lease_until IS NULL OR lease_until < now())
                    ORDER BY wake_at NULLS FIRST, created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [limit, BATCH_LEASE_MS, randomBytes(16).toString("hex")],
    );
    return result.rows;
  }

  /** Keeps the lease while a step runs; false once another claim has taken the batch. */
  async renew(batch: BatchRow): Promise<boolean> {
    const result = await this.db.query("UPDATE jobs.batches SET lease_until = now() + $3 * interval '1 millisecond' WHERE id = $1 AND lease_token = $2", [
      batch.id,
      batch.lease_token,
      BATCH_LEASE_MS,
    ]);
    return result.rowCount > 0;
  }

  /**
   * Gives a batch back, to be taken again after `wakeInMs` (unless another claim holds it now). One
   * cancelled while the step ran (its status no longer the one claimed) is due at once: the step's
   * wait (for the limits, say, up to a minute) is no longer what it waits for.
   */
  async release(batch: BatchRow, wakeInMs: number): Promise<void> {
    await this.db.query(
      `UPDATE jobs.batches SET lease_until = NULL, lease_token = NULL,
         wake_at = CASE WHEN status = 'cancelling' AND $4 <> 'cancelling' THEN NULL ELSE now() + $3 * interval '1 millisecond' END
       WHERE id = $1 AND lease_token = $2`,
      [batch.id, batch.lease_token, wakeInMs, batch.status],
    );
  }

  /** Validation passed: the lines are kept, and the batch runs. */
  async startRunning(batch: BatchRow, lines: BatchLine[]): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const started = await tx.query(
        "UPDATE jobs.batches SET status = 'in_progress', in_progress_at = now(), total = $3 WHERE id = $1 AND lease_token = $2 AND status = 'validating'",
        [batch.id, batch.lease_token, lines.length],
      );
      if (started.rowCount === 0) return false;
      for (let from = 0; from < lines.length; from += 1000) {
        const chunk = lines.slice(from, from + 1000);
        await tx.query(
          `INSERT INTO jobs.batch_lines (batch_id, line, custom_id, body)
           SELECT $1, line, custom_id, body FROM unnest($2::int[], $3::text[], $4::text[]) AS l(line, custom_id, body)`,
          [batch.id, chunk.map((l) => l.line), chunk.map((l) => l.custom_id), chunk.map((l) => l.body)],
        );
      }
      return true;
    });
  }

  /** Validation failed: the batch fails with what was wrong, line by line. */
  async failValidation(batch: BatchRow, errors: BatchError[]): Promise<void> {
    await this.db.query(
      "UPDATE jobs.batches SET status = 'failed', failed_at = now(), errors = $3, lease_until = NULL WHERE id = $1 AND lease_token = $2 AND status = 'validating'",
      [batch.id, batch.lease_token, JSON.stringify(errors)],
    );
  }

  /** The next lines to admit, in order, from `from`. */
  async lines(id: string, from: number, limit: number): Promise<BatchLine[]> {
    const result = await this.db.query<BatchLine>(
      "SELECT line, custom_id, body FROM jobs.batch_lines WHERE batch_id = $1 AND line >= $2 ORDER BY line LIMIT $3",
      [id, from, limit],
    );
    return result.rows;
  }

  /**
   * Moves the batch's cursor from `from` to `to` in the transaction `write` runs in (which writes the
   * lines' jobs): when another runner moved it first, or the batch stopped running, nothing is
   * written and this answers false.
   */
  async advance(batch: BatchRow, from: number, to: number, write: (tx: Queryable) => Promise<void>): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const moved = await tx.query("UPDATE jobs.batches SET next_line = $4 WHERE id = $1 AND lease_token = $2 AND next_line = $3 AND status = 'in_progress'", [
        batch.id,
        batch.lease_token,
        from,
        to,
      ]);
      if (moved.rowCount === 0) return false;
      await write(tx);
      return true;
    });
  }

  /** Lines that will not run, as failed jobs of the batch (never dispatched), for its error file. */
  async refuse(tx: Queryable, batch: BatchRow, lines: RefusedLine[]): Promise<void> {
    if (lines.length === 0) return;
    await tx.query(
      `INSERT INTO jobs.jobs (id, workspace_id, key_id, route, request, identity, request_id, status, attempts, request_hash, error, status_code,
         completed_at, batch_id, batch_line, custom_id)
       SELECT 'job_' || id, $1, $2, $3, 'null', $4::jsonb, 'batch_req_' || id, '${jobStatuses.failed}', 0, '', error, status_code, now(), $5, line, custom_id
       FROM unnest($6::text[], $7::int[], $8::text[], $9::text[], $10::int[]) AS l(id, line, custom_id, error, status_code)`,
      [
        batch.workspace_id,
        batch.key_id,
        routeOf(batch.endpoint),
        JSON.stringify(batch.identity),
        batch.id,
        lines.map(() => randomBytes(16).toString("hex")),
        lines.map((l) => l.line),
        lines.map((l) => l.customId),
        lines.map((l) => JSON.stringify(l.error)),
        lines.map((l) => l.statusCode),
      ],
    );
  }

  /** Every line has run: the batch's files are being written. */
  async markFinalizing(batch: BatchRow): Promise<boolean> {
    const result = await this.db.query(
      "UPDATE jobs.batches SET status = 'finalizing', finalizing_at = now() WHERE id = $1 AND lease_token = $2 AND status = 'in_progress'",
      [batch.id, batch.lease_token],
    );
    return result.rowCount > 0;
  }

  /**
   * Ends a batch whose lines have all finished (or will never run): its output and error files are
   * written from the line jobs inside Postgres, a part per thousand lines, lines never run written
   * as `reason` errors; the counts and usage are kept on the batch, and its input lines go. One
   * transaction under the batch's lock, which first checks that no line still runs: a crash leaves
   * the batch to be finalized again, never half-done, and a line admitted at the last moment is
   * waited for, never written as failed.
   */
  async finalize(batch: BatchRow, outcome: "completed" | "expired" | "cancelled"): Promise<boolean> {
    const expiresIn = batch.output_expires_after ?? DEFAULT_FILE_EXPIRY_SECONDS;
    const notRun = outcome === "expired" ? batchExpired : batchCancelled;
    return this.db.transaction(async (tx) => {
      const locked = await tx.query(`SELECT 1 FROM jobs.batches WHERE id = $1 AND lease_token = $2 AND ${ACTIVE_SQL} FOR UPDATE`, [
        batch.id,
        batch.lease_token,
      ]);
      if (locked.rowCount === 0) return false;
      const running = await tx.query(`SELECT 1 FROM jobs.jobs WHERE batch_id = $1 AND ${OPEN_JOB} LIMIT 1`, [batch.id]);
      if (running.rowCount > 0) return false;
      const summary = await tx.query<{ completed: string; failed: string; usage: BatchUsage }>(
        `WITH ${EVERY_LINE}
         SELECT count(*) FILTER (WHERE ok) AS completed, count(*) FILTER (WHERE NOT ok) AS failed,
           json_build_object(
             'input_tokens', COALESCE(sum(COALESCE((usage ->> 'prompt_tokens')::bigint, (usage ->> 'input_tokens')::bigint, 0)), 0),
             'input_tokens_details', json_build_object('cached_tokens',
               COALESCE(sum(COALESCE((usage -> 'prompt_tokens_details' ->> 'cached_tokens')::bigint, (usage -> 'input_tokens_details' ->> 'cached_tokens')::bigint, 0)), 0)),
             'output_tokens', COALESCE(sum(COALESCE((usage ->> 'completion_tokens')::bigint, (usage ->> 'output_tokens')::bigint, 0)), 0),
             'output_tokens_details', json_build_object('reasoning_tokens',
               COALESCE(sum(COALESCE((usage -> 'completion_tokens_details' ->> 'reasoning_tokens')::bigint, (usage -> 'output_tokens_details' ->> 'reasoning_tokens')::bigint, 0)), 0)),
             'total_tokens', COALESCE(sum(COALESCE((usage ->> 'total_tokens')::bigint, 0)), 0)) AS usage
         FROM every`,
        [batch.id, notRun.code, notRun.message],
      );
      const { completed, failed, usage } = summary.rows[0]!;
      // A file of the lines that answered 2xx, and one of the rest; either only when it has lines.
      const writeFile = async (kind: "output" | "error", ok: boolean, lines: number): Promise<string | null> => {
        if (lines === 0) return null;
        const id = newFileId();
        await tx.query(
          `INSERT INTO jobs.files (id, workspace_id, purpose, filename, bytes, expires_at)
           VALUES ($1, $2, 'batch_output', $3, 0, now() + $4 * interval '1 second')`,
          [id, batch.workspace_id, `${batch.id}_${kind}.jsonl`, expiresIn],
        );
        await tx.query(
          `WITH ${EVERY_LINE}, numbered AS (SELECT line, text, row_number() OVER (ORDER BY line) - 1 AS n FROM every WHERE ok = $5)
           INSERT INTO jobs.file_parts (file_id, part, content)
           SELECT $4, n / ${LINES_PER_PART}, convert_to(string_agg(text || E'\\n', '' ORDER BY line), 'UTF8') FROM numbered GROUP BY n / ${LINES_PER_PART}`,
          [batch.id, notRun.code, notRun.message, id, ok],
        );
        await tx.query("UPDATE jobs.files SET bytes = (SELECT sum(length(content)) FROM jobs.file_parts WHERE file_id = $1) WHERE id = $1", [id]);
        return id;
      };
      const outputFileId = await writeFile("output", true, Number(completed));
      const errorFileId = await writeFile("error", false, Number(failed));
      const counts = { total: batch.total, completed: Number(completed), failed: Number(failed) };
      await tx.query(
        `UPDATE jobs.batches SET status = $2, output_file_id = $3, error_file_id = $4, request_counts = $5, usage = $6, lease_until = NULL, lease_token = NULL,
           finalizing_at = COALESCE(finalizing_at, CASE WHEN $2 = 'completed' THEN now() END),
           completed_at = CASE WHEN $2 = 'completed' THEN now() END,
           expired_at = CASE WHEN $2 = 'expired' THEN now() END,
           cancelled_at = CASE WHEN $2 = 'cancelled' THEN now() END
         WHERE id = $1`,
        [batch.id, outcome, outputFileId, errorFileId, JSON.stringify(counts), JSON.stringify(usage)],
      );
      // The line jobs stay for the jobs' retention: a redelivered event of one still finds its row.
      await tx.query("DELETE FROM jobs.batch_lines WHERE batch_id = $1", [batch.id]);
      return true;
    });
  }

  /** Finished batches older than the retention their files have; returns how many went. */
  async removeFinished(olderThanSeconds: number, limit: number): Promise<number> {
    const result = await this.db.query(
      `DELETE FROM jobs.batches WHERE id IN (SELECT id FROM jobs.batches WHERE NOT (${ACTIVE_SQL})
         AND COALESCE(completed_at, failed_at, expired_at, cancelled_at) < now() - $1 * interval '1 second' LIMIT $2)`,
      [olderThanSeconds, limit],
    );
    return result.rowCount;
  }
}

/** OpenAI's words for lines a batch never ran. */
const batchExpired = { code: "batch_expired", message: "This request could not be executed before the completion window expired." };
const batchCancelled = { code: "batch_cancelled", message: "This request was not executed because the batch was cancelled." };

/** The async route a batch's endpoint names (`/v1/chat/completions` → `chat/completions`). */
export function routeOf(endpoint: string): string {
  return endpoint.replace(/^\/v1\//, "");
}
