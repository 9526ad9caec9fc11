import type { Request, Response } from "express";
import { type UsageRecord, type UsageRecordRow, usageRecordsOf, usageRowFields } from "@gw/contracts";
import type { UsagePublisher, UsageSource } from "@gw/service-kit";
import { describe, expect, it } from "vitest";
import { resolveRoute } from "../routes";
import { usageRecorder } from "./usage-recorder";

/** A recorder whose publisher keeps what it is given, and makes the rows on demand, as a batch does, read back as the ledger reads them. */
function recording(refuse: (n: number) => boolean = () => false) {
  const sources: UsageSource[] = [];
  let published = 0;
  const publish = (source: UsageSource): boolean => {
    if (refuse(published++)) return false;
    sources.push(source);
    return true;
  };
  const record = usageRecorder({ publish } as unknown as UsagePublisher);
  const made = (): UsageRecord[] => {
    const rows = sources.map((s) => (typeof s === "function" ? s() : s)).filter((r): r is UsageRecordRow => r !== undefined);
    sources.length = 0;
    return rows.length === 0 ? [] : (usageRecordsOf({ fields: [...usageRowFields], rows }) as UsageRecord[]);
  };
  return { record, made };
}

/** A closed chat request, as the close listener sees it. */
function closed(requestId = "req_0123", over: { path?: string; locals?: Record<string, unknown>; status?: number } = {}): { req: Request; res: Response } {
  const locals = {
    requestId,
    identity: { workspace_id: "ws_a", key_id: "key_a" },
    target: { backend: "inference" },
    json: { model: "gpt-4o-mini", stream: false },
    outcomeText: "p=openai&um=gpt-4o-mini&a=1&uus=12500&in=10&out=2",
    ...over.locals,
  };
  const res = { locals, writableFinished: true, statusCode: over.status ?? 200, getHeader: () => "application/json" } as unknown as Response;
  return { req: { path: over.path ?? "/v1/chat/completions" } as Request, res };
}

describe("the usage recorder", () => {
  it("when a request closes, then its record starts when the request started, read on the wall clock only when the record is made", () => {
    const { record, made } = recording();
    const { req, res } = closed();
    const before = Date.now();
    record(req, res, 250, process.hrtime.bigint() - 250_000_000n);
    const [one] = made();
    const after = Date.now();
    expect(one?.started_at).toBeGreaterThanOrEqual(before - 251);
    expect(one?.started_at).toBeLessThanOrEqual(after - 249);
    expect(one).toMatchObject({
      request_id: "req_0123",
      duration_ms: 250,
      workspace_id: "ws_a",
      key_id: "key_a",
      route: "/v1/chat/completions",
      model: "gpt-4o-mini",
      status: 200,
      stream: false,
      outcome: { provider: "openai", upstream_model: "gpt-4o-mini", attempts: 1, upstream_ms: 12.5, usage: { input_tokens: 10, output_tokens: 2 } },
    });
  });

  it("when the backend names the model (a multipart form) and the call failed, then the record holds that model and the error, its outcome the rest", () => {
    const { record, made } = recording();
    const outcomeText = "m=whisper-1&p=openai&um=whisper-1&a=2&uus=3000&u.audio_seconds=3.5";
    const { req, res } = closed("req_audio", {
      path: "/v1/audio/transcriptions",
      status: 400,
      locals: { json: undefined, errorType: "invalid_request_error", outcomeText },
    });
    record(req, res, 4, process.hrtime.bigint());
    const [one] = made();
    expect(one).toMatchObject({
      request_id: "req_audio",
      route: "/v1/audio/transcriptions",
      model: "whisper-1",
      status: 400,
      error_type: "invalid_request_error",
    });
    expect(one?.outcome).toEqual({ provider: "openai", upstream_model: "whisper-1", attempts: 2, upstream_ms: 3, units: { audio_seconds: 3.5 } });
    expect(one?.job_id).toBeUndefined();
  });

  it("when a job is read, then the record names the route's template and the job, and a request without a report has no outcome", () => {
    const { record, made } = recording();
    const path = "/v1/async/chat/completions/job_0f3a";
    const match = resolveRoute(path, "GET");
    if (!("target" in match)) throw new Error(`no route for ${path}`);
    const { req, res } = closed("req_job", { path, locals: { target: match.target, json: undefined, outcomeText: undefined } });
    record(req, res, 1, process.hrtime.bigint());
    const [one] = made();
    expect(one).toMatchObject({ route: "/v1/async/chat/completions/{job_id}", job_id: "job_0f3a", status: 200 });
    expect(one?.model).toBeUndefined();
    expect(one?.outcome).toBeUndefined();
  });

  it("when the publisher refuses a record (too many waiting), then the next record is still the next request's", () => {
    const { record, made } = recording((n) => n === 1);
    for (const id of ["req_a", "req_b", "req_c"]) {
      const { req, res } = closed(id);
      record(req, res, 5, process.hrtime.bigint());
    }
    expect(made().map((r) => r.request_id)).toEqual(["req_a", "req_c"]);
    expect(made()).toEqual([]);
  });
});
