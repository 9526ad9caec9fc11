import { PayloadTooLargeError, type Bus } from "@gw/bus";
import { internalHeaders, jobStatuses, type JobEvent, type JobWork } from "@gw/contracts";
import { errorTypeOf, GatewayError } from "@gw/errors";
import { jobUsageRecord } from "./job-usage";
import type { Logger } from "@gw/logger";
import { errorFormatFor, usageRecordsKind } from "@gw/service-kit";
import { traceHeaders } from "@gw/telemetry";
import { workSubjectFor } from "./async-routes";
import type { JobCredentials } from "./job-credentials";
import type { JobRow, JobStore } from "./job-store";

export interface JobTimings {
  /** How long one attempt may run before it is given up on and retried. */
  attemptTimeoutMs: number;
  /** Attempts (deadline retries) before a job fails. */
  maxAttempts: number;
  /** How long finished jobs are kept. */
  retentionMs: number;
  /** How often the sweep runs. */
  sweepIntervalMs: number;
}

const BATCH = 100;
/** An undispatched row younger than this is probably being published by the request that wrote it. */
const OUTBOX_GRACE_MS = 2_000;

/**
 * Puts jobs' work on the bus and keeps it moving: the work message of a row (the row always exists
 * first), and a sweep that publishes rows a crash left unpublished, retries attempts past their
 * deadline, fails jobs out of attempts and removes finished jobs past retention.
 * The message id is the job id and attempt, so a row published twice (by its request and by the
 * sweep) is one message on the bus.
 */
export class Dispatcher {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private readonly publishing = new Set<Promise<boolean>>();

  constructor(
    private readonly store: JobStore,
    private readonly bus: Bus,
    private readonly timings: JobTimings,
    private readonly logger: Logger,
    private readonly credentials: JobCredentials,
    /** A job the sweep failed (its row now finished), for the polls waiting on it. */
    private readonly finished: (jobId: string) => void = () => {},
  ) {}

  /**
   * Publishes a job's work and records it; a failure is logged and left to the sweep. The work
   * carries the workspace's credentials as the row holds them now, sealed for transit: each attempt
   * takes the current ones. An attempt already published keeps what it was given, its redeliveries
   * included; a change reaches the attempts after it.
   */
  async dispatch(job: JobRow): Promise<boolean> {
    let credentials: string | undefined;
    try {
      credentials = job.credentials ? this.credentials.forWork(job.workspace_id, job.credentials) : (job.transit_credentials ?? undefined);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      return this.failUnrunnable(job, err);
    }
    const work: JobWork = {
      job_id: job.id,
      route: job.route,
      identity: job.identity,
      request: job.request,
      attempt: job.attempts,
      ...(credentials ? { credentials } : {}),
      ...(job.request_id ? { request_id: job.request_id } : {}),
      ...(job.upstream_id ? { resume: { upstream_id: job.upstream_id } } : {}),
    };
    // Called from the creating request's handler (dispatchSoon), the active context is that
    // request's: the work continues its trace. The sweep's publishes carry none.
    const headers = traceHeaders();
    if (job.request_id) headers[internalHeaders.requestId] = job.request_id;
    try {
      const subject = workSubjectFor(job.route);
      const opts = { msgId: `${job.id}:${job.attempts}`, headers };
      // A request the message cannot carry stays in the row: the worker reads it from this service.
      // An upload surely too large is not encoded whole only to be refused (a 25 MB one is 33 MB of JSON).
      const stored = () => ({ ...work, request: { format: "stored" as const, bytes: requestBytes(job.request) } });
      const surelyTooLarge = job.request.format === "multipart" && job.request.base64.length > this.bus.maxPayloadBytes;
      try {
        await this.bus.enqueue(subject, surelyTooLarge && subject === "jobs.work.inference" ? stored() : work, opts);
      } catch (err) {
        if (!(err instanceof PayloadTooLargeError) || subject !== "jobs.work.inference") throw err;
        await this.bus.enqueue(subject, stored(), opts);
      }
      await this.store.markDispatched(job.id, job.attempts);
      return true;
    } catch (err) {
      this.logger.warn({ err, job: job.id }, "jobs: publishing a job's work failed; the sweep will publish it");
      return false;
    }
  }

  /**
   * A job that cannot run as its workspace asked (its credentials do not open here) fails, through
   * the same event a worker would send, so its token reservation is settled as any failure's.
   */
  private async failUnrunnable(job: JobRow, error: GatewayError): Promise<boolean> {
    this.logger.warn({ job: job.id, code: error.code }, "jobs: a job's credentials did not open; the job fails");
    const event: JobEvent = {
      job_id: job.id,
      status: jobStatuses.failed,
      attempt: job.attempts,
      at: Date.now(),
      error: error.toEnvelope(errorFormatFor(`/v1/${job.route}`)),
    };
    try {
      await this.bus.enqueue("jobs.events", event, { msgId: `${job.id}:${job.attempts}:final` });
      await this.store.markDispatched(job.id, job.attempts);
      return true;
    } catch (err) {
      this.logger.warn({ err, job: job.id }, "jobs: failing a job failed; the sweep will try again");
      return false;
    }
  }

  /** Publishes in the background; `stop` waits for these. */
  dispatchSoon(job: JobRow): void {
    const publishing = this.dispatch(job).finally(() => this.publishing.delete(publishing));
    this.publishing.add(publishing);
  }

  start(): void {
    const tick = () => {
      this.sweeping = this.sweep()
        .catch((err: unknown) => this.logger.warn({ err }, "jobs: sweep failed; trying again"))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.timings.sweepIntervalMs);
        });
    };
    this.timer = setTimeout(tick, this.timings.sweepIntervalMs);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.all([this.sweeping, ...this.publishing]);
  }

  /** Tells every worker that attempts up to `attempt` are superseded; a lost message costs only the upstream call it would have stopped. */
  private async cancel(jobId: string, attempt: number): Promise<void> {
    if (attempt < 1) return;
    await this.bus
      .publish("jobs.cancel", { job_id: jobId, attempt })
      .catch((err: unknown) => this.logger.warn({ err, job: jobId, attempt }, "jobs: cancelling a superseded attempt failed"));
  }

  async sweep(): Promise<void> {
    const { maxAttempts, retentionMs } = this.timings;
    for (const job of await this.store.retryOverdue(maxAttempts, BATCH)) {
      this.logger.warn({ job: job.id, attempt: job.attempts }, "jobs: an attempt passed its deadline; retrying");
      // The attempt replaced stops first (a live worker aborts its upstream call), so the job is
      // paid for once unless that attempt truly died.
      await this.cancel(job.id, job.attempts - 1);
      await this.dispatch(job);
    }
    const failed = await this.store.failOverdue(maxAttempts, timeoutError, BATCH);
    if (failed.length > 0) this.logger.warn({ jobs: failed.map((f) => f.id) }, "jobs: out of attempts past the deadline; failed");
    for (const { id, attempts, job } of failed) {
      this.finished(id);
      await this.cancel(id, attempts);
      const envelope = timeoutError(job.route, maxAttempts);
      const record = jobUsageRecord(id, job, { status: new GatewayError("upstream_timeout", "").status, errorType: errorTypeOf(envelope) });
      if (record)
        await usageRecordsKind
          .send(this.bus, [record])
          .catch((err: unknown) => this.logger.warn({ err, job: id }, "jobs: a timed-out job's usage record could not be published"));
    }
    for (const job of await this.store.undispatched(OUTBOX_GRACE_MS, BATCH)) await this.dispatch(job);
    const removed = await this.store.removeFinished(retentionMs, BATCH * 10);
    if (removed > 0) this.logger.info({ removed }, "jobs: finished jobs past retention removed");
  }
}

/** The error of a job that ran out of attempts, in the envelope its regular route uses. */
function timeoutError(route: string, attempts: number): unknown {
  const error = new GatewayError("upstream_timeout", `The job did not finish in time after ${attempts} attempt${attempts === 1 ? "" : "s"}`);
  return error.toEnvelope(errorFormatFor(`/v1/${route}`));
}

/** The request's size as JSON; an upload's base64 is counted, not encoded again (it needs no escapes). */
function requestBytes(request: JobRow["request"]): number {
  if (request.format !== "multipart") return Buffer.byteLength(JSON.stringify(request));
  return Buffer.byteLength(JSON.stringify({ ...request, base64: "" })) + request.base64.length;
}
