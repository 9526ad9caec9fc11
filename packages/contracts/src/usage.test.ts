import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallOutcome, MAX_USAGE_BATCH, TokenUsage, UsageRecord, UsageRecords, usageRecordsOf, usageRowFields, usageRowsMessage } from "./usage";

const full: UsageRecord = {
  request_id: "req_full",
  started_at: 1_764_000_000_123,
  duration_ms: 12.345,
  workspace_id: "ws_a",
  key_id: "key_a",
  route: "/v1/async/{route}/{job_id}",
  model: "team/model",
  status: 502,
  error_type: "upstream_error",
  stream: false,
  job_id: "job_1",
  outcome: {
    model: "shown",
    provider: "openai",
    upstream_model: "gpt-4o-mini",
    attempts: 3,
    upstream_ms: 0.412,
    ttft_ms: 9.5,
    usage: { input_tokens: 1200, output_tokens: 0, cached_input_tokens: 1024, cache_write_tokens: 5, reasoning_tokens: 40 },
    units: { images: 2, audio_seconds: 1.5 },
  },
};
const bare: UsageRecord = {
  request_id: "req_bare",
  started_at: 1,
  duration_ms: 0,
  workspace_id: "ws_a",
  key_id: "key_a",
  route: "/v1/models",
  status: 200,
  stream: true,
};

/** A message as the consumer gets it: through JSON, and the bus's schema check. */
const overTheWire = (message: unknown) => UsageRecords.parse(JSON.parse(JSON.stringify(message)));

describe("usage.records as rows", () => {
  it("carries every field of a record there and back, and leaves absent ones absent", () => {
    const records = [full, bare, { ...bare, request_id: "req_partial", outcome: { provider: "p", usage: { output_tokens: 7 } } }];
    expect(usageRecordsOf(overTheWire(usageRowsMessage(records)))).toEqual(records);
  });

  it("has a place for every field the record's schema defines, so none is dropped on the way", () => {
    const paths = [
      ...Object.keys(UsageRecord.shape).filter((name) => name !== "outcome"),
      ...Object.keys(CallOutcome.shape)
        .filter((name) => name !== "usage")
        .map((name) => `outcome.${name}`),
      ...Object.keys(TokenUsage.shape).map((name) => `outcome.usage.${name}`),
    ];
    expect([...usageRowFields].sort()).toEqual(paths.sort());
  });

  it("is much smaller than the records as objects", () => {
    const records = Array.from({ length: 256 }, (_, i) => ({ ...full, request_id: `req_${i}` }));
    const rows = JSON.stringify(usageRowsMessage(records)).length;
    expect(rows).toBeLessThan(0.7 * JSON.stringify({ records }).length);
  });

  it("reads a row by the message's own field list: another order, a field it does not know, fewer fields", () => {
    const message = overTheWire({
      fields: ["status", "request_id", "outcome.usage.input_tokens", "future_field", "outcome.provider"],
      rows: [
        [200, "req_1", 5, "x", null],
        [404, "req_2"],
      ],
    });
    expect(usageRecordsOf(message)).toEqual([
      { status: 200, request_id: "req_1", outcome: { usage: { input_tokens: 5 } }, future_field: "x" },
      { status: 404, request_id: "req_2" },
    ]);
  });

  it("reads a row in this version's fields exactly as by any field list", () => {
    // The same fields and one more no row fills: read through the general path, which must agree.
    const general = [...usageRowFields, "later_field"];
    const value = fc.oneof(
      fc.constant(null),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string({ maxLength: 8 }),
      fc.boolean(),
      fc.dictionary(fc.constantFrom("images", "pages"), fc.nat()),
    );
    const row = fc.array(value, { maxLength: usageRowFields.length, size: "max" });
    // Each field alone, which random rows almost never give: a nested object made or left out wrongly shows here.
    const alone = usageRowFields.map((_, i) => usageRowFields.map((__, j) => (j === i ? 1 : null)));
    const knownAlone = usageRecordsOf(overTheWire({ fields: [...usageRowFields], rows: alone }));
    expect(knownAlone).toEqual(usageRecordsOf(overTheWire({ fields: general, rows: alone })));
    fc.assert(
      fc.property(fc.array(fc.oneof(row, fc.string({ maxLength: 3 })), { minLength: 1, maxLength: 5 }), (rows) => {
        const known = usageRecordsOf(overTheWire({ fields: [...usageRowFields], rows }));
        expect(known).toEqual(usageRecordsOf(overTheWire({ fields: general, rows })));
        // Key order too: both build each record in field order.
        expect(known.map((r) => JSON.stringify(r))).toEqual(usageRecordsOf(overTheWire({ fields: general, rows })).map((r) => JSON.stringify(r)));
      }),
      { numRuns: 500 },
    );
  });

  it("still reads records sent as objects, as publishers did before", () => {
    expect(usageRecordsOf(overTheWire({ records: [full, bare] }))).toEqual([full, bare]);
  });

  it("passes a row that is not an array on as it is, for the ledger's check to refuse", () => {
    expect(usageRecordsOf(overTheWire({ fields: ["request_id"], rows: ["req_1", { request_id: "req_2" }] }))).toEqual(["req_1", { request_id: "req_2" }]);
  });

  it("takes a batch of 1 to MAX_USAGE_BATCH rows or records, and refuses an empty, longer or non-array one saying which", () => {
    const rows = (n: number) => Array.from({ length: n }, (_, i) => [`req_${i}`]);
    expect(usageRecordsOf(UsageRecords.parse({ fields: ["request_id"], rows: rows(MAX_USAGE_BATCH) }))).toHaveLength(MAX_USAGE_BATCH);
    expect(usageRecordsOf(UsageRecords.parse({ records: rows(1) }))).toEqual([["req_0"]]);
    for (const bad of [[], rows(MAX_USAGE_BATCH + 1), { 0: ["req_0"], length: 1 }, "req_0", null]) {
      const rowsResult = UsageRecords.safeParse({ fields: ["request_id"], rows: bad });
      expect(rowsResult.success, JSON.stringify(bad)).toBe(false);
      expect(JSON.stringify(rowsResult.error?.issues)).toContain(`rows must be an array of 1 to ${MAX_USAGE_BATCH} items`);
      const recordsResult = UsageRecords.safeParse({ records: bad });
      expect(recordsResult.success, JSON.stringify(bad)).toBe(false);
      expect(JSON.stringify(recordsResult.error?.issues)).toContain(`records must be an array of 1 to ${MAX_USAGE_BATCH} items`);
    }
  });

  it("refuses field names that are not plain paths", () => {
    for (const field of ["__proto__.polluted", "outcome..usage", "Request_id", "", "a.__proto__"]) {
      expect(UsageRecords.safeParse({ fields: [field], rows: [[1]] }).success, field).toBe(false);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
