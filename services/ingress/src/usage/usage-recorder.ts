import type { Request, RequestHandler, Response } from "express";
import { CLIENT_CLOSED_STATUS, type UsageRecord } from "@gw/contracts";
import { readCallOutcome, type UsagePublisher } from "@gw/service-kit";
import { ledgerRouteOf } from "../routes";

declare global {
  namespace Express {
    interface Locals {
      /** When the request arrived: wall clock for the record, monotonic for its duration. */
      startedAt?: number;
      startedMono?: number;
      /** The backend's report of the call (`x-gw-outcome`), as it came; parsed when the record is made. */
      outcomeText?: string;
      /** The backend's error type header, on an error answer. */
      backendErrorType?: string;
      /** The backend will publish this request's record itself (jobs, when the job ends). */
      recordDeferred?: boolean;
    }
  }
}

/**
 * One usage record per request that reached a workspace, published when the answer is complete (or
 * the caller went away): ingress saw the whole exchange (the status and the time the caller got,
 * its own refusals, a backend that failed to answer), and the backend told it what the call used in
 * the `x-gw-outcome` header or trailer. Publishing happens after the answer and never blocks it: the
 * record is queued for the bus (UsagePublisher), which does the I/O later.
 */
export function recordUsage(publisher: UsagePublisher): RequestHandler {
  return (req, res, next) => {
    res.locals.startedAt = Date.now();
    res.locals.startedMono = performance.now();
    res.once("close", () => finish(publisher, req, res));
    next();
  };
}

function finish(publisher: UsagePublisher, req: Request, res: Response): void {
  const { identity, target } = res.locals;
  // No key, or a request refused before its route was known: nobody's usage.
  if (!identity || !target || res.locals.recordDeferred) return;
  const record = usageRecordOf(req, res);
  if (record) publisher.publish(record);
}

export function usageRecordOf(req: Request, res: Response): UsageRecord | undefined {
  const { identity, target } = res.locals;
  if (!identity || !target) return undefined;
  const now = performance.now();
  const route = ledgerRouteOf(req.path, target);
  const complete = res.writableFinished;
  const status = complete ? res.statusCode : CLIENT_CLOSED_STATUS;
  const contentType = res.getHeader("content-type");
  const stream = typeof contentType === "string" && contentType.startsWith("text/event-stream");
  const record: UsageRecord = {
    request_id: res.locals.requestId,
    started_at: res.locals.startedAt ?? Date.now(),
    duration_ms: round(now - (res.locals.startedMono ?? now)),
    workspace_id: identity.workspace_id,
    key_id: identity.key_id,
    route,
    status,
    stream: stream || requestedStream(res.locals.json),
  };
  const model = modelOf(res.locals.json);
  const outcome = readCallOutcome(res.locals.outcomeText);
  if (model) record.model = model;
  else if (outcome?.model) record.model = outcome.model;
  const errorType = res.locals.errorType ?? res.locals.backendErrorType;
  if (errorType && status >= 400) record.error_type = errorType.slice(0, 100);
  if (route.endsWith("{job_id}")) record.job_id = req.path.slice(req.path.lastIndexOf("/") + 1);
  if (outcome) {
    const { model: _model, ...rest } = outcome;
    if (Object.keys(rest).length > 0) record.outcome = rest;
  }
  return record;
}

function modelOf(json: unknown): string | undefined {
  const model = typeof json === "object" && json !== null ? (json as { model?: unknown }).model : undefined;
  return typeof model === "string" && model.length > 0 && model.length <= 256 ? model : undefined;
}

function requestedStream(json: unknown): boolean {
  return typeof json === "object" && json !== null && (json as { stream?: unknown }).stream === true;
}

function round(ms: number): number {
  return Math.max(0, Math.round(ms * 1000) / 1000);
}
