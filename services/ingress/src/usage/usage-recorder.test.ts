import type { Request, Response } from "express";
import type { UsageRecord } from "@gw/contracts";
import type { UsagePublisher, UsageSource } from "@gw/service-kit";
import { describe, expect, it } from "vitest";
import { usageRecorder } from "./usage-recorder";

/** A recorder whose publisher keeps what it is given, and makes the records on demand, as a batch does. */
function recording(refuse: (n: number) => boolean = () => false) {
  const sources: UsageSource[] = [];
  let published = 0;
  const publish = (source: UsageSource): boolean => {
    if (refuse(published++)) return false;
    sources.push(source);
    return true;
  };
  const record = usageRecorder({ publish } as unknown as UsagePublisher);
  const made = (): UsageRecord[] => sources.map((s) => (typeof s === "function" ? s() : s)).filter((r): r is UsageRecord => r !== undefined);
  return { record, made };
}

/** A closed chat request, as the close listener sees it. */
function closed(requestId = "req_0123"): { req: Request; res: Response } {
  const locals = {
    requestId,
    identity: { workspace_id: "ws_a", key_id: "key_a" },
    target: { backend: "inference" },
    json: { model: "gpt-4o-mini", stream: false },
    outcomeText: "p=openai&um=gpt-4o-mini&a=1&uus=12500&in=10&out=2",
  };
  const res = { locals, writableFinished: true, statusCode: 200, getHeader: () => "application/json" } as unknown as Response;
  return { req: { path: "/v1/chat/completions" } as Request, res };
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
