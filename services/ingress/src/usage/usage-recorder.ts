import type { Request, Response } from "express";
import { CLIENT_CLOSED_STATUS, type UsageRecord, wholeMicros } from "@gw/contracts";
import { parseCallOutcome, type ServiceAppOptions, type UsagePublisher } from "@gw/service-kit";
import { ledgerRouteOf } from "../routes";
import { FactsTape, type UsageFacts } from "./facts-tape";

declare global {
  namespace Express {
    interface Locals {
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
 * the `x-gw-outcome` header or trailer. Runs from the app's close listener (ServiceAppOptions.onClose)
 * and reads only what the record needs, onto a tape outside the JS heap (FactsTape); the record itself
 * is made later, a batch at a time, when the publisher sends it (parsing and building records in a
 * loop costs a fraction of doing it cold after each request), and the bus does the I/O after that.
 */
export function usageRecorder(publisher: UsagePublisher): NonNullable<ServiceAppOptions["onClose"]> {
  const tape = new FactsTape();
  // One function for every record: each call makes the oldest facts' record, and the publisher
  // calls it once per publish, in order.
  const next = (): UsageRecord | undefined => {
    const facts = tape.shift();
    return facts && recordOf(facts);
  };
  return (req, res, durationMs, startedAt) => {
    const facts = usageFactsOf(req, res, durationMs, startedAt);
    if (!facts) return;
    // On the tape first: a full batch is made within publish.
    tape.push(facts);
    if (!publisher.publish(next)) tape.dropNewest();
  };
}

function usageFactsOf(req: Request, res: Response, durationMs: number, startedAt: bigint): UsageFacts | undefined {
  const { identity, target } = res.locals;
  // No key, or a request refused before its route was known: nobody's usage.
  if (!identity || !target || res.locals.recordDeferred) return undefined;
  const complete = res.writableFinished;
  const status = complete ? res.statusCode : CLIENT_CLOSED_STATUS;
  const contentType = res.getHeader("content-type");
  const json = res.locals.json;
  return {
    requestId: res.locals.requestId,
    // No clock read here, after every answer, cold: the start's monotonic time is turned into wall
    // time when the record is made, a batch at a time.
    startedAtNs: Number(startedAt),
    durationMs,
    workspaceId: identity.workspace_id,
    keyId: identity.key_id,
    path: req.path,
    target,
    status,
    stream: (typeof contentType === "string" && contentType.startsWith("text/event-stream")) || requestedStream(json),
    model: modelOf(json),
    errorType: status >= 400 ? (res.locals.errorType ?? res.locals.backendErrorType) : undefined,
    outcomeText: res.locals.outcomeText,
  };
}

function recordOf(facts: UsageFacts): UsageRecord {
  const route = ledgerRouteOf(facts.path, facts.target);
  const durationMs = Math.max(0, wholeMicros(facts.durationMs) / 1000);
  const record: UsageRecord = {
    request_id: facts.requestId,
    started_at: Math.round(Date.now() - (Number(process.hrtime.bigint()) - facts.startedAtNs) / 1e6),
    duration_ms: durationMs,
    workspace_id: facts.workspaceId,
    key_id: facts.keyId,
    route,
    status: facts.status,
    stream: facts.stream,
  };
  const outcome = parseCallOutcome(facts.outcomeText);
  const model = facts.model ?? modelOf(outcome);
  if (model) record.model = model;
  if (facts.errorType) record.error_type = facts.errorType.slice(0, 100);
  if (route.endsWith("{job_id}")) record.job_id = facts.path.slice(facts.path.lastIndexOf("/") + 1);
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
