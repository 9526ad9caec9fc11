import type { Bus, Consumer, MessageMeta } from "@gw/bus";
import { internalHeaders, jobStatuses, type BinaryJobResult, type CallOutcome, type JobEvent, type JobWork } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { errorFormatFor, JobAttempts, readCallOutcome, reportJobEvent, signIdentity } from "@gw/service-kit";
import { busWithTraceContext, traceHeaders, withConsumerSpan } from "@gw/telemetry";
import { Agent, request } from "undici";

export interface JobWorkerOptions {
  bus: Bus;
  /** This service's own URL: a job runs through the regular route, so its result is that route's answer. */
  selfUrl: string;
  internalSecret: string;
  logger: Logger;
  /** Jobs run at once by this process. */
  concurrency: number;
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

type Outcome = ({ ok: true; result: unknown; usageTokens?: number } | { ok: false; status: number; error: unknown }) & { call?: CallOutcome };

/**
 * Runs model jobs from `jobs.work.inference`: reports `processing`, calls the job's regular route on
 * this service with the identity (and sealed credentials) the creating call had, and reports
 * `completed` with the route's answer or `failed` with its error envelope. The message is acked only
 * after the outcome is on the bus, so a crash at any point means a redelivery, never a lost job; the
 * jobs service absorbs the duplicate events that redeliveries cause.
 */
export async function startJobWorker(options: JobWorkerOptions): Promise<Consumer> {
  const { bus, logger } = options;
  // Unbounded here: the route bounds each upstream attempt, the jobs service bounds the whole job.
  const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 });

  // Events carry the job's trace context, so the jobs service's handling of them joins the trace.
  const publish = (work: JobWork, status: string, extra: Partial<JobEvent> = {}) => reportJobEvent(busWithTraceContext(bus), work, status, extra);

  const attempts = new JobAttempts(bus);

  async function run(work: JobWork, signal: AbortSignal): Promise<Outcome> {
    const headers: Record<string, string> = {
      ...traceHeaders(),
      [internalHeaders.identity]: signIdentity(work.identity, options.internalSecret),
      "content-type": work.request.format === "json" ? "application/json" : work.request.content_type,
    };
    if (work.credentials) headers[internalHeaders.credentials] = work.credentials;
    if (work.request_id) headers[internalHeaders.requestId] = work.request_id;
    const body = work.request.format === "json" ? JSON.stringify(work.request.body) : Buffer.from(work.request.base64, "base64");
    const response = await request(`${options.selfUrl}/v1/${work.route}`, { method: "POST", headers, body, dispatcher: agent, signal });
    const contentType = String(response.headers["content-type"] ?? "");
    const bytes = Buffer.from(await response.body.arrayBuffer());
    const answer = readAnswer(contentType, bytes);
    const call = readCallOutcome(response.headers[internalHeaders.outcome]);
    if (response.statusCode >= 200 && response.statusCode < 300) {
      const usage = Number(response.headers[internalHeaders.usageTokens]);
      return { ok: true, result: answer, call, ...(Number.isInteger(usage) && usage >= 0 ? { usageTokens: usage } : {}) };
    }
    return { ok: false, status: response.statusCode, error: answer, call };
  }

  async function runJob(work: JobWork, meta: MessageMeta): Promise<void> {
    const log = { job: work.job_id, route: work.route, attempt: work.attempt, delivery: meta.deliveryCount };
    const attempt = attempts.begin(work);
    try {
      await runAttempt(work, meta, attempt.signal, log);
    } finally {
      attempt.end();
    }
    if (attempt.superseded) logger.info(log, "jobs: a superseded attempt was stopped; a newer one runs the job");
  }

  /** One attempt; once superseded it reports nothing more and its message is acked (the newer attempt has its own). */
  async function runAttempt(work: JobWork, meta: MessageMeta, signal: AbortSignal, log: Record<string, unknown>): Promise<void> {
    if (signal.aborted) return;
    await publish(work, jobStatuses.processing);
    let outcome: Outcome;
    try {
      outcome = await run(work, signal);
    } catch (err) {
      if (signal.aborted) return;
      // This service's own route did not answer: it is stopping or overloaded. Try again later.
      logger.warn({ ...log, err }, "jobs: running a job failed before an answer; it will be delivered again");
      throw err;
    }
    if (signal.aborted) return;
    if (!outcome.ok && TEMPORARY_STATUSES.has(outcome.status) && meta.deliveryCount < TEMPORARY_FAILURE_DELIVERIES) {
      logger.warn({ ...log, status: outcome.status }, "jobs: a job failed for now; it will be delivered again");
      throw new Error(`temporary failure ${outcome.status}`);
    }
    if (outcome.ok)
      await publish(work, jobStatuses.completed, { result: outcome.result, usage_tokens: outcome.usageTokens, outcome: outcome.call, status_code: 200 });
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
      await agent.close();
    },
  };
}

/**
 * A JSON answer as JSON, a text one (srt, vtt, text transcriptions) as its text, anything else
 * (speech) as its bytes in base64 with their content type.
 */
function readAnswer(contentType: string, bytes: Buffer): unknown {
  if (/^application\/json/i.test(contentType)) {
    try {
      return JSON.parse(bytes.toString("utf8"));
    } catch {
      return new GatewayError("upstream_error", "The model route answered with malformed JSON").toEnvelope(errorFormatFor("/v1"));
    }
  }
  if (/^text\//i.test(contentType)) return bytes.toString("utf8");
  const binary: BinaryJobResult = { object: "binary", content_type: contentType || "application/octet-stream", data: bytes.toString("base64") };
  return binary;
}
