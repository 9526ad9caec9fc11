import { buffer } from "node:stream/consumers";
import type { Bus, Consumer, MessageMeta } from "@gw/bus";
import { jobStatuses, type BinaryJobResult, type CallOutcome, type JobEvent, type JobWork } from "@gw/contracts";
import { errorTypeOf, GatewayError } from "@gw/errors";
import { redactSecrets, type Logger } from "@gw/logger";
import { CredentialsReader, JobAttempts, UploadGate, errorFormatFor, newRequestId, reportJobEvent, toGatewayError } from "@gw/service-kit";
import { busWithTraceContext, withConsumerSpan } from "@gw/telemetry";
import type { RouteAnswer, RouteContext, RouteHandlers } from "./routes/route-handler";
import { AttemptSupersededError, JobsClient } from "./jobs-client";
import { CallMeter } from "./usage/call-meter";
import type { GenAiObserver } from "./usage/genai-observer";

export interface JobWorkerOptions {
  bus: Bus;
  /** The model routes' own handlers: a job runs through its regular route, so its result is that route's answer. */
  handlers: RouteHandlers;
  /** Opens the workspace credentials a job carries (sealed for transit, as ingress seals them). */
  internalSecret: string;
  /** The GenAI metrics hear of a job's call as of a live one's. */
  observer?: GenAiObserver;
  /** The jobs service's URL (asked for per call: the embedded default knows it once jobs listens). */
  jobsUrl: () => string;
  logger: Logger;
  /** Jobs run at once by this process. */
  concurrency: number;
  /**
   * Bytes of requests too large for a work message (uploads, read from the jobs service) that this
   * process runs at once: the body limit, so that a burst of 25 MB transcriptions cannot run it out
   * of memory. The others wait their turn, until their attempt is superseded.
   */
  largeRequestBytes: number;
}

/** Deliveries of one attempt before a temporary failure (429, 5xx after the route's own retries) fails the job. */
const TEMPORARY_FAILURE_DELIVERIES = 3;
/** Wait before such a delivery is tried again: the route already retried and fell back. */
const RETRY_DELAY_MS = 5_000;
/**
 * How soon a job held by a process that died is handed to another: the bus tells the server a
 * running job is still being worked on every third of this, so it bounds detection, not job length.
 */
const ACK_WAIT_MS = 10_000;
const TEMPORARY_STATUSES = new Set([429, 502, 503, 504]);
/**
 * A job still running after this long is reported `processing` (which also pushes its deadline out);
 * one that ends sooner goes from queued to its end directly, sparing an event, its handling and an
 * UPDATE: a third of what a quick job cost the jobs service and Postgres (bench/README.md).
 */
const PROCESSING_REPORT_AFTER_MS = 250;

type Result = { ok: true; result: unknown; usageTokens?: number } | { ok: false; status: number; error: unknown };
type Outcome = Result & { call?: CallOutcome };

/**
 * Runs model jobs from `jobs.work.inference`: reports `processing`, runs the job's regular route's
 * handler in this process with the identity (and credentials) the creating call had, and reports
 * `completed` with the route's answer or `failed` with its error envelope. The message is acked only
 * after the outcome is on the bus, so a crash at any point means a redelivery, never a lost job; the
 * jobs service absorbs the duplicate events that redeliveries cause.
 */
export async function startJobWorker(options: JobWorkerOptions): Promise<Consumer> {
  const { bus, logger } = options;
  const credentials = new CredentialsReader(options.internalSecret, (values) => redactSecrets(logger, values));
  const jobs = new JobsClient(options.jobsUrl, options.internalSecret);

  // Events carry the job's trace context, so the jobs service's handling of them joins the trace. A
  // result too large for its event is handed to the jobs service first.
  const publish = (work: JobWork, status: string, extra: Partial<JobEvent> = {}, signal?: AbortSignal) =>
    reportJobEvent(busWithTraceContext(bus), work, status, extra, signal && ((json) => jobs.storeResult(work, json, signal)));

  const attempts = new JobAttempts(bus);
  const largeRequests = new UploadGate(options.largeRequestBytes);

  async function run(work: JobWork, signal: AbortSignal): Promise<Outcome> {
    const path = `/v1/${work.route}`;
    const started = performance.now();
    const meter = new CallMeter();
    const release = work.request.format === "stored" ? await largeRequests.acquire(work.request.bytes, signal, Number.POSITIVE_INFINITY) : undefined;
    try {
      return await runHeld(work, signal, path, started, meter);
    } finally {
      release?.();
    }
  }

  async function runHeld(work: JobWork, signal: AbortSignal, path: string, started: number, meter: CallMeter): Promise<Outcome> {
    // A request its work message could not carry is read from the jobs service.
    const request = work.request.format === "stored" ? await jobs.request(work, signal) : work.request;
    let answer: RouteAnswer;
    try {
      const handler = options.handlers.get(path);
      if (!handler) throw new GatewayError("not_found", `Unknown route: POST ${path}`);
      const requestId = work.request_id ?? newRequestId();
      const ctx: RouteContext = {
        identity: work.identity,
        credentials: credentials.read(work.credentials, work.identity.workspace_id),
        requestId,
        log: logger.child({ request_id: requestId, job: work.job_id }),
        signal,
        meter,
      };
      const input = request.format === "json" ? { body: request.body } : { body: Buffer.from(request.base64, "base64"), contentType: request.content_type };
      answer = await handler(input, ctx);
    } catch (err) {
      answer = { kind: "error", error: toGatewayError(err) };
    }
    const outcome = await outcomeOf(answer, path);
    const status = outcome.ok ? 200 : outcome.status;
    options.observer?.ended(path, meter, status, outcome.ok ? undefined : (errorTypeOf(outcome.error) ?? String(status)), performance.now() - started);
    return { ...outcome, call: meter.outcome() };
  }

  async function runJob(work: JobWork, meta: MessageMeta): Promise<void> {
    const log = { job: work.job_id, route: work.route, attempt: work.attempt, delivery: meta.deliveryCount };
    const attempt = attempts.begin(work);
    try {
      await runAttempt(work, meta, attempt.signal, log);
    } catch (err) {
      if (!(err instanceof AttemptSupersededError)) throw err;
      logger.info(log, "jobs: the jobs service no longer takes this attempt; it reports nothing more");
    } finally {
      attempt.end();
    }
    if (attempt.superseded) logger.info(log, "jobs: a superseded attempt was stopped; a newer one runs the job");
  }

  /** One attempt; once superseded it reports nothing more and its message is acked (the newer attempt has its own). */
  async function runAttempt(work: JobWork, meta: MessageMeta, signal: AbortSignal, log: Record<string, unknown>): Promise<void> {
    if (signal.aborted) return;
    let running: Promise<void> | undefined;
    const report = setTimeout(() => {
      running = publish(work, jobStatuses.processing).catch((err: unknown) => logger.warn({ ...log, err }, "jobs: reporting a running job failed"));
    }, PROCESSING_REPORT_AFTER_MS);
    let outcome: Outcome;
    try {
      outcome = await run(work, signal);
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof AttemptSupersededError) throw err;
      // The route failed before an answer: this service is stopping or overloaded. Try again later.
      logger.warn({ ...log, err }, "jobs: running a job failed before an answer; it will be delivered again");
      throw err;
    } finally {
      clearTimeout(report);
      await running;
    }
    if (signal.aborted) return;
    if (!outcome.ok && TEMPORARY_STATUSES.has(outcome.status) && meta.deliveryCount < TEMPORARY_FAILURE_DELIVERIES) {
      logger.warn({ ...log, status: outcome.status }, "jobs: a job failed for now; it will be delivered again");
      throw new Error(`temporary failure ${outcome.status}`);
    }
    if (outcome.ok)
      await publish(
        work,
        jobStatuses.completed,
        { result: outcome.result, usage_tokens: outcome.usageTokens, outcome: outcome.call, status_code: 200 },
        signal,
      );
    else await publish(work, jobStatuses.failed, { error: outcome.error, outcome: outcome.call, status_code: outcome.status });
  }

  const consumer = await bus.consume(
    "jobs.work.inference",
    { durable: "inference", concurrency: options.concurrency, maxDeliver: 10, ackWaitMs: ACK_WAIT_MS, retryDelayMs: RETRY_DELAY_MS },
    (work: JobWork, meta: MessageMeta) => withConsumerSpan({ bus, subject: "jobs.work.inference", group: "inference", meta }, () => runJob(work, meta)),
  );
  return {
    async stop() {
      await consumer.stop();
      attempts.stop();
      await jobs.close();
    },
  };
}

/** The route's answer as the job keeps it: JSON as JSON, text as text, bytes (speech) in base64 with their type. */
async function outcomeOf(answer: RouteAnswer, path: string): Promise<Result> {
  switch (answer.kind) {
    case "json":
      return { ok: true, result: answer.body, ...(answer.totalTokens !== undefined ? { usageTokens: answer.totalTokens } : {}) };
    case "text":
      return { ok: true, result: answer.text };
    case "bytes": {
      const binary: BinaryJobResult = { object: "binary", content_type: answer.contentType, data: (await buffer(answer.body)).toString("base64") };
      return { ok: true, result: binary };
    }
    case "live":
      return failure(new GatewayError("invalid_request", "A streamed answer cannot be a job's result; send `stream: false`"), path);
    case "error":
      return failure(answer.error, path);
  }
}

function failure(error: GatewayError, path: string): Result {
  return { ok: false, status: error.status, error: error.toEnvelope(errorFormatFor(path)) };
}
