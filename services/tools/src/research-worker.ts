import type { Bus, Consumer, MessageMeta } from "@gw/bus";
import { jobStatuses, type JobEvent, type JobWork, type WebtoolResearchRequest, type WebtoolResearchStatus } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { redactSecrets, type Logger } from "@gw/logger";
import { CredentialsReader, JobAttempts, reportJobEvent } from "@gw/service-kit";
import { busWithTraceContext, traceHeaders, withConsumerSpan } from "@gw/telemetry";
import type { Dispatcher } from "undici";
import type { GatewayConfig } from "@gw/config";
import type { RetryPolicy } from "./upstream/retry";
import { getResearch, startResearch, type WebtoolResearchDeps } from "./webtool/research";

export interface ResearchPolling {
  /** First wait between two reads of the upstream task. */
  initialMs: number;
  /** The wait grows by half each time, up to this. */
  maxMs: number;
}

export interface ResearchWorkerOptions {
  bus: Bus;
  gateway: GatewayConfig;
  secrets: Record<string, string | undefined>;
  agent: Dispatcher;
  internalSecret: string;
  logger: Logger;
  concurrency: number;
  polling: ResearchPolling;
  retry?: RetryPolicy;
}

/** What `openCredentials` answers for sealed credentials that do not open. */
const unopenable = Symbol("unopenable");

/** The route name research jobs carry (the jobs service's `researchRoute`). */
const RESEARCH_ROUTE = "tools/webtool/research";
/** Deliveries before a research job whose provider keeps failing for now is failed. */
const TEMPORARY_FAILURE_DELIVERIES = 3;
/** Reads in a row that fail for now before this delivery gives up and lets the job be delivered again. */
const READ_FAILURES_PER_DELIVERY = 5;

/**
 * Runs research jobs from `jobs.work.tools` in two steps, each a message acked only once its effect
 * is on the bus: the first starts the task on the web-tool provider, reports its id and publishes
 * the second, which names the task; the second polls it with a growing delay, reports each status it
 * passes through and the finished task. A retry by the jobs service resumes a known task too.
 */
export async function startResearchWorker(options: ResearchWorkerOptions): Promise<Consumer> {
  const { bus, logger } = options;
  const credentials = new CredentialsReader(options.internalSecret, (values) => redactSecrets(logger, values));
  const stopping = new AbortController();
  const attempts = new JobAttempts(bus);

  // Events carry the job's trace context, so the jobs service's handling of them joins the trace.
  const publish = (work: JobWork, status: string, extra: Partial<JobEvent> = {}) => reportJobEvent(busWithTraceContext(bus), work, status, extra);

  const fail = (work: JobWork, error: GatewayError) =>
    publish(work, jobStatuses.failed, { error: error.toEnvelope("openai"), status_code: error.status, outcome: { provider: "webtool" } });

  async function run(work: JobWork, meta: MessageMeta, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    if (work.route !== RESEARCH_ROUTE || work.request.format !== "json") {
      await fail(work, new GatewayError("not_found", `The tools service runs no jobs of route ${work.route}`));
      return;
    }
    const credentials = openCredentials(work);
    if (credentials === unopenable) {
      // Never the platform's credential in place of the workspace's: the job fails, saying why.
      await fail(
        work,
        new GatewayError(
          "provider_not_configured",
          "The workspace's own provider credentials for this job could not be opened by the tools service, so the job was not run (the platform's credential is never used in their place); check that every service has the same GATEWAY_INTERNAL_SECRET",
        ),
      );
      return;
    }
    const deps: WebtoolResearchDeps = {
      gateway: options.gateway,
      secrets: options.secrets,
      agent: options.agent,
      credentials,
      retry: options.retry,
    };
    const lastDelivery = meta.deliveryCount >= TEMPORARY_FAILURE_DELIVERIES;
    const upstreamId = work.resume?.upstream_id;
    if (!upstreamId) {
      const started = await startResearch(deps, work.request.body as WebtoolResearchRequest, { signal });
      if (!started.ok) {
        if (started.error.retryable && !lastDelivery) throw started.error;
        await fail(work, started.error);
        return;
      }
      const upstream_id = started.value.request_id;
      if (signal.aborted) return;
      await publish(work, started.value.status, { upstream_id });
      // The polling continues as a message of its own that names the task: if this process dies
      // while polling, the task is resumed where it is rather than started (and paid for) again.
      await bus.enqueue("jobs.work.tools", { ...work, resume: { upstream_id } }, { msgId: `${work.job_id}:${work.attempt}:resume`, headers: traceHeaders() });
      return;
    }
    let wait = options.polling.initialMs;
    let readFailures = 0;
    let lastStatus: string | undefined;
    for (;;) {
      await sleep(wait, signal);
      wait = Math.min(options.polling.maxMs, Math.round(wait * 1.5));
      const read = await getResearch(deps, upstreamId, { signal });
      if (signal.aborted) return;
      if (!read.ok) {
        if (!read.error.retryable) {
          await fail(work, read.error);
          return;
        }
        if (++readFailures < READ_FAILURES_PER_DELIVERY) continue;
        if (!lastDelivery) throw read.error;
        await fail(work, read.error);
        return;
      }
      readFailures = 0;
      const task = read.value;
      if (task.status === jobStatuses.completed) {
        // One research task is one billable call to the web-tool provider, for the usage record.
        await publish(work, jobStatuses.completed, { result: researchResult(task), status_code: 200, outcome: { provider: "webtool", units: { calls: 1 } } });
        return;
      }
      if (task.status === jobStatuses.failed) {
        await fail(work, new GatewayError("upstream_error", "The research task failed at the web-tool provider"));
        return;
      }
      if (task.status !== lastStatus) {
        lastStatus = task.status;
        await publish(work, task.status, { upstream_id: upstreamId });
      }
    }
  }

  /** The workspace's own credentials; none when the job carries none; `unopenable` when they do not open. */
  function openCredentials(work: JobWork): Record<string, string> | undefined | typeof unopenable {
    try {
      return credentials.read(work.credentials, work.identity.workspace_id);
    } catch {
      logger.warn({ job: work.job_id }, "research: the job's sealed credentials did not open; the job fails");
      return unopenable;
    }
  }

  const consumer = await bus.consume(
    "jobs.work.tools",
    { durable: "tools", concurrency: options.concurrency, maxDeliver: 10, ackWaitMs: 10_000, retryDelayMs: 5_000 },
    (work, meta) =>
      withConsumerSpan({ bus, subject: "jobs.work.tools", group: "tools", meta }, async () => {
        const attempt = attempts.begin(work);
        try {
          // A superseded attempt stops polling and reports nothing; the newer one resumes the task.
          await run(work, meta, AbortSignal.any([stopping.signal, attempt.signal]));
        } catch (err) {
          if (attempt.superseded && !stopping.signal.aborted) return;
          if (!stopping.signal.aborted)
            logger.warn({ job: work.job_id, delivery: meta.deliveryCount, err }, "research: a job failed for now; it will be delivered again");
          throw err;
        } finally {
          attempt.end();
        }
      }),
  );
  return {
    async stop() {
      // Polls in progress end at once; their jobs are delivered again to a running replica.
      stopping.abort();
      await consumer.stop();
      attempts.stop();
    },
  };
}

/** The finished task as our research answer carries it: everything but the provider's own ids and timing. */
function researchResult(task: WebtoolResearchStatus): Record<string, unknown> {
  const { request_id: _id, status: _status, response_time: _time, created_at: _created, ...rest } = task as Record<string, unknown>;
  return rest;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error("stopping"));
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error("stopping"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
