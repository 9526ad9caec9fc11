import type { CallOutcome, CapturedBodies, CapturedBody, JobEvent, JobRequest, UsageRecord } from "@gw/contracts";
import { DEFAULT_BODY_CAPTURE_BYTES, jobStatuses } from "@gw/contracts";
import { errorTypeOf } from "@gw/errors";
import { capturedJson } from "@gw/service-kit";
import { researchRoute } from "./async-routes";
import type { FinishedJob } from "./job-store";

/**
 * The usage record of an async job, published by jobs once the job has finished, under the request
 * id of the call that created it (ingress publishes none for that call: the 202 said
 * `x-gw-record-deferred`). It runs from the job's creation to its end; its status is the run's
 * (200, or the failed run's own status), and its usage is what the run reported.
 */
export function jobUsageRecord(jobId: string, job: FinishedJob, end: { status: number; errorType?: string; outcome?: CallOutcome }): UsageRecord | undefined {
  // Jobs created before the ledger, or by a caller ingress did not name, have no request to record.
  if (!job.request_id) return undefined;
  const started = job.created_at.getTime();
  const record: UsageRecord = {
    request_id: job.request_id,
    started_at: started,
    duration_ms: Math.max(0, job.completed_at.getTime() - started),
    workspace_id: job.workspace_id,
    key_id: job.key_id,
    route: job.route === researchRoute ? "/v1/tools/webtool/research" : `/v1/async/${job.route}`,
    status: end.status,
    stream: false,
    job_id: jobId,
  };
  const model = modelOf(job.request) ?? end.outcome?.model;
  if (model) record.model = model;
  if (end.errorType) record.error_type = end.errorType;
  if (end.outcome) record.outcome = end.outcome;
  return record;
}

/** How a finishing event ends the record: the run's status, and the error envelope's type on a failure. */
export function endOf(event: JobEvent): { status: number; errorType?: string; outcome?: CallOutcome } {
  const failed = event.status === jobStatuses.failed;
  const status = event.status_code ?? (failed ? 502 : 200);
  const errorType = failed ? errorTypeOf(event.error) : undefined;
  return { status, ...(errorType ? { errorType } : {}), ...(event.outcome ? { outcome: event.outcome } : {}) };
}

/** The public model of a stored JSON request; a form (transcriptions) or an unreadable one has none here. */
function modelOf(request: string | null): string | undefined {
  if (!request) return undefined;
  try {
    const parsed = JSON.parse(request) as { format?: string; body?: { model?: unknown } };
    const model = parsed.format === "json" ? parsed.body?.model : undefined;
    return typeof model === "string" && model.length > 0 && model.length <= 256 ? model : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A finished job's bodies for its workspace's detailed logs, when it keeps them: the request that
 * created it (as stored) and the job's result, or its error, redacted and cut as ingress does for a
 * live call. Undefined when the workspace keeps none, or the job has no request id to file them under.
 */
export function jobBodies(
  job: FinishedJob,
  event: JobEvent,
  secrets: readonly string[] = [],
  maxBytes = DEFAULT_BODY_CAPTURE_BYTES,
): CapturedBodies | undefined {
  if (!job.capture_days || !job.request_id) return undefined;
  return {
    request_id: job.request_id,
    started_at: job.created_at.getTime(),
    workspace_id: job.workspace_id,
    key_id: job.key_id,
    retention_days: job.capture_days,
    request: requestBody(job.request, maxBytes, secrets),
    response: responseBody(event, maxBytes, secrets),
  };
}

function responseBody(event: JobEvent, maxBytes: number, secrets: readonly string[]): CapturedBody {
  // A result too large for the event is held by the jobs service; the log notes its size, as for an upload.
  const stored = event.result_stored;
  if (stored) return { text: `[a result of ${stored.bytes} bytes, kept with the job, not in the log]`, truncated: false, bytes: stored.bytes };
  const body = event.result ?? event.error ?? null;
  return capturedJson(body, Buffer.byteLength(JSON.stringify(body)), maxBytes, secrets);
}

function requestBody(stored: string | null, maxBytes: number, secrets: readonly string[]): CapturedBody {
  let request: JobRequest | undefined;
  try {
    request = stored ? (JSON.parse(stored) as JobRequest) : undefined;
  } catch {
    request = undefined;
  }
  if (request?.format === "json") return capturedJson(request.body, Buffer.byteLength(JSON.stringify(request.body)), maxBytes, secrets);
  if (request?.format === "multipart") {
    const bytes = Math.floor((request.base64.length * 3) / 4);
    return { text: `[multipart/form-data of ${bytes} bytes, not kept]`, truncated: false, bytes, content_type: "multipart/form-data" };
  }
  return { text: "", truncated: false, bytes: 0 };
}
