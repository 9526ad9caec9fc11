import { UsageRecord } from "@gw/contracts";
import { describe, expect, it } from "vitest";
import { isUsageRecord, usageRecordErrors } from "./record-check";

const good = (): Record<string, unknown> => ({
  request_id: "req_1",
  started_at: 1_764_000_000_000,
  duration_ms: 1.25,
  workspace_id: "ws_a",
  key_id: "key_a",
  route: "/v1/chat/completions",
  model: "gpt-4o-mini",
  status: 200,
  stream: false,
  job_id: "job_0001",
  outcome: {
    provider: "openai",
    upstream_model: "gpt-4o-mini-2024-07-18",
    attempts: 1,
    upstream_ms: 0.412,
    ttft_ms: 0.2,
    usage: { input_tokens: 12, output_tokens: 30, cached_input_tokens: 0, cache_write_tokens: 1, reasoning_tokens: 2 },
    units: { images: 1, audio_seconds: 2.5 },
  },
});

/** Each case changes one thing in a good record. */
const cases: [string, (r: Record<string, unknown>) => void][] = [
  ["as it is", () => {}],
  [
    "without its optional fields",
    (r) => {
      for (const name of ["model", "job_id", "outcome"]) delete r[name];
    },
  ],
  [
    "with unknown fields, at the top and in the outcome",
    (r) => {
      r.extra = 1;
      (r.outcome as Record<string, unknown>).extra = "x";
      ((r.outcome as Record<string, unknown>).usage as Record<string, unknown>).extra_tokens = 3;
    },
  ],
  ["without a request id", (r) => delete r.request_id],
  ["with an empty request id", (r) => (r.request_id = "")],
  // Lengths are counted in code points: 128 emoji are 256 UTF-16 units.
  ["with a request id of 128 emoji, the most", (r) => (r.request_id = "😀".repeat(128))],
  ["with a request id of 129 emoji", (r) => (r.request_id = "😀".repeat(129))],
  ["with a status that is not an integer", (r) => (r.status = 200.5)],
  ["with a status as text", (r) => (r.status = "200")],
  ["with a status out of range", (r) => (r.status = 600)],
  ["with a negative duration", (r) => (r.duration_ms = -1)],
  ["with stream as text", (r) => (r.stream = "false")],
  ["with a job id not starting job_", (r) => (r.job_id = "jab_1")],
  ["with a fractional token count", (r) => ((r.outcome as { usage: Record<string, unknown> }).usage.input_tokens = 1.5)],
  ["with a negative token count", (r) => ((r.outcome as { usage: Record<string, unknown> }).usage.output_tokens = -1)],
  ["with a unit the ledger does not know", (r) => ((r.outcome as { units: Record<string, unknown> }).units.minutes = 1)],
  ["with a unit as text", (r) => ((r.outcome as { units: Record<string, unknown> }).units.images = "1")],
  ["with the outcome as an array", (r) => (r.outcome = [])],
  ["that is null", () => {}],
];

describe("isUsageRecord", () => {
  it.each(cases)("when a record comes %s, then it decides as UsageRecord's zod schema does, and keeps what zod keeps", (name, change) => {
    const raw = name === "that is null" ? null : good();
    if (raw) change(raw);
    const zod = UsageRecord.safeParse(structuredClone(raw));
    const checked = structuredClone(raw);
    expect(isUsageRecord(checked)).toBe(zod.success);
    if (zod.success) expect(checked).toEqual(zod.data);
    else expect(usageRecordErrors().length).toBeGreaterThan(0);
  });

  it("when a good record is checked, then it is the same object, not a copy", () => {
    const raw = good();
    const outcome = raw.outcome;
    expect(isUsageRecord(raw)).toBe(true);
    expect(raw.outcome).toBe(outcome);
  });
});
