import type { Request, Response } from "express";
import { CLIENT_CLOSED_STATUS, readOutcomeInto, USAGE_ROW_OUTCOME_AT, type UsageRecordRow, usageRowFields, wholeMicros } from "@gw/contracts";
import type { ServiceAppOptions, UsagePublisher } from "@gw/service-kit";
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
 * It is made as the row its message carries (usageRowFields), the backend's report read straight
 * into it: no record, outcome or usage object is made only to be turned into a row.
 */
export function usageRecorder(publisher: UsagePublisher): NonNullable<ServiceAppOptions["onClose"]> {
  const tape = new FactsTape();
  const clock = new WallClock();
  // One function for every record: each call makes the oldest facts' row, and the publisher calls
  // it once per publish, in order.
  const next = (): UsageRecordRow | undefined => {
    const facts = tape.shift();
    return facts && rowOf(facts, clock.offsetMs());
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

const MODEL_AT = usageRowFields.indexOf("model");

/** The facts' record as a row of usageRowFields; `wallOffsetMs` turns a monotonic start into wall-clock time. */
function rowOf(facts: UsageFacts, wallOffsetMs: number): UsageRecordRow {
  const { path } = facts;
  const route = ledgerRouteOf(path, facts.target);
  // In usageRowFields' order (the recorder's test reads rows back by it); a literal, so the row is
  // one packed array for the message's JSON.
  // biome-ignore format: the outcome's twelve places on one line
  const row: UsageRecordRow = [
    facts.requestId,
    Math.round(wallOffsetMs + facts.startedAtNs / 1e6),
    Math.max(0, wholeMicros(facts.durationMs) / 1000),
    facts.workspaceId,
    facts.keyId,
    route,
    facts.model ?? null,
    facts.status,
    facts.errorType ? facts.errorType.slice(0, 100) : null,
    facts.stream,
    route.endsWith("{job_id}") ? path.slice(path.lastIndexOf("/") + 1) : null,
    // The outcome's twelve, filled from the backend's report below.
    null, null, null, null, null, null, null, null, null, null, null, null,
  ];
  if (readOutcomeInto(facts.outcomeText, row, USAGE_ROW_OUTCOME_AT)) {
    // The backend names the public model when ingress could not read it (a multipart form); it is
    // the record's model, not part of its outcome.
    const model = modelName(row[USAGE_ROW_OUTCOME_AT]);
    if (row[MODEL_AT] === null && model !== undefined) row[MODEL_AT] = model;
    row[USAGE_ROW_OUTCOME_AT] = null;
  }
  return row;
}

/**
 * The wall clock's lead on the monotonic one (`Date.now()` less `process.hrtime`, in ms), read again
 * every 64 records: it moves only when the wall clock is set, so reading both clocks for every
 * record bought nothing.
 */
class WallClock {
  private offset = 0;
  private uses = 0;

  offsetMs(): number {
    if (this.uses++ % 64 === 0) this.offset = Date.now() - Number(process.hrtime.bigint()) / 1e6;
    return this.offset;
  }
}

function modelOf(json: unknown): string | undefined {
  return typeof json === "object" && json !== null ? modelName((json as { model?: unknown }).model) : undefined;
}

function modelName(model: unknown): string | undefined {
  return typeof model === "string" && model.length > 0 && model.length <= 256 ? model : undefined;
}

function requestedStream(json: unknown): boolean {
  return typeof json === "object" && json !== null && (json as { stream?: unknown }).stream === true;
}
