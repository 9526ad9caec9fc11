import { describe, expect, it } from "vitest";
import { formatCallOutcome, outcomeTokens, parseCallOutcomeText, readOutcomeInto } from "./outcome-header";
import { CallOutcome, USAGE_ROW_OUTCOME_AT, type UsageRecord, usageRecordsOf, usageRowFields, usageRowOf, usageUnitNames } from "./usage";

/** A record without an outcome, whose row the text is read into. */
const bare: UsageRecord = {
  request_id: "req_1",
  started_at: 5,
  duration_ms: 2,
  workspace_id: "ws",
  key_id: "k",
  route: "/v1/embeddings",
  status: 200,
  stream: false,
};

/** The text read into a usage row with readOutcomeInto, and the row read back as the ledger reads it. */
function readIntoRow(text: string | undefined): { found: boolean; record: UsageRecord } {
  const row = usageRowOf(bare);
  const found = readOutcomeInto(text, row, USAGE_ROW_OUTCOME_AT);
  const [record] = usageRecordsOf({ fields: [...usageRowFields], rows: [row] }) as UsageRecord[];
  return { found, record: record as UsageRecord };
}

/** The format's rules written as plainly as possible (pairs, then names), to hold the fast reader to. */
function plainRead(text: string): CallOutcome | undefined {
  const names: Record<string, [string, string] | [string]> = {
    m: ["model"],
    p: ["provider"],
    um: ["upstream_model"],
    a: ["attempts"],
    ums: ["upstream_ms"],
    tt: ["ttft_ms"],
    in: ["usage", "input_tokens"],
    out: ["usage", "output_tokens"],
    cr: ["usage", "cached_input_tokens"],
    cw: ["usage", "cache_write_tokens"],
    rs: ["usage", "reasoning_tokens"],
    ...Object.fromEntries(usageUnitNames.map((unit) => [`u.${unit}`, ["units", unit] as [string, string]])),
  };
  // Times in microseconds, read as milliseconds.
  const micros: Record<string, [string]> = { uus: ["upstream_ms"], tus: ["ttft_ms"] };
  const out: Record<string, unknown> = {};
  for (const pair of text.split("&")) {
    const eq = pair.indexOf("=");
    const name = eq > 0 ? pair.slice(0, eq) : "";
    const path = names[name] ?? micros[name];
    if (!path) continue;
    const raw = pair.slice(eq + 1);
    let value: string | number;
    if (path[0] === "model" || path[0] === "provider" || path[0] === "upstream_model") {
      try {
        value = decodeURIComponent(raw);
      } catch {
        continue;
      }
    } else {
      value = Number(raw);
      if (raw === "" || !Number.isFinite(value)) continue;
      if (micros[name]) value /= 1000;
    }
    if (path.length === 1) out[path[0]] = value;
    else {
      out[path[0]] ??= {};
      (out[path[0]] as Record<string, unknown>)[path[1]] = value;
    }
  }
  return Object.keys(out).length > 0 ? (out as CallOutcome) : undefined;
}

describe("the x-gw-outcome header", () => {
  it("carries every field there and back, text that needs escaping included", () => {
    const outcome: CallOutcome = {
      model: "team/ünïcode model&x=1%",
      provider: "openai-eu",
      upstream_model: "gpt-4o;2024 08 06",
      attempts: 3,
      upstream_ms: 412.125,
      ttft_ms: 37.5,
      usage: { input_tokens: 1200, output_tokens: 80, cached_input_tokens: 1024, cache_write_tokens: 5, reasoning_tokens: 40 },
      units: { images: 2, audio_seconds: 12.75, calls: 1 },
    };
    const text = formatCallOutcome(outcome);
    // Only what a header value may hold, with no JSON to write or parse.
    expect(text).toMatch(/^[\x21-\x7e]+$/);
    expect(text.startsWith("{")).toBe(false);
    expect(parseCallOutcomeText(text)).toEqual(outcome);
    expect(readIntoRow(text).record.outcome).toEqual(outcome);
  });

  it("encodes every name right however many it has seen (the kept encodings are bounded)", () => {
    for (let n = 0; n < 2_500; n++) {
      const outcome = { provider: `p ${n % 1_300}&`, upstream_model: `m/${n % 7}=%` };
      expect(parseCallOutcomeText(formatCallOutcome(outcome))).toEqual(outcome);
    }
  });

  it("writes a provider and upstream model it has kept as it wrote them first, beside the other fields", () => {
    const first = formatCallOutcome({ provider: "openai", upstream_model: "gpt-4o-mini", attempts: 1, usage: { input_tokens: 3 } });
    expect(first).toBe("p=openai&um=gpt-4o-mini&a=1&in=3");
    expect(formatCallOutcome({ provider: "openai", upstream_model: "gpt-4o-mini", attempts: 2 })).toBe("p=openai&um=gpt-4o-mini&a=2");
    expect(formatCallOutcome({ provider: "openai", upstream_model: "gpt-4o", attempts: 1 })).toBe("p=openai&um=gpt-4o&a=1");
    // With the model shown, or a name missing, the names are joined as they come.
    expect(formatCallOutcome({ model: "m", provider: "openai", upstream_model: "gpt-4o" })).toBe("m=m&p=openai&um=gpt-4o");
    expect(formatCallOutcome({ upstream_model: "gpt-4o", attempts: 1 })).toBe("um=gpt-4o&a=1");
    expect(formatCallOutcome({ attempts: 1, upstream_ms: 2.5 })).toBe("a=1&uus=2500");
  });

  it("leaves absent fields absent", () => {
    expect(parseCallOutcomeText(formatCallOutcome({ provider: "p", attempts: 1 }))).toEqual({ provider: "p", attempts: 1 });
    expect(formatCallOutcome({})).toBe("");
    expect(parseCallOutcomeText("")).toBeUndefined();
    expect(parseCallOutcomeText(undefined)).toBeUndefined();
  });

  it("writes times in whole microseconds and reads them back as the milliseconds they were", () => {
    const text = formatCallOutcome({ attempts: 1, upstream_ms: 0.412, ttft_ms: 1234.567 });
    expect(text).toBe("a=1&uus=412&tus=1234567");
    expect(parseCallOutcomeText(text)).toEqual({ attempts: 1, upstream_ms: 0.412, ttft_ms: 1234.567 });
    // Below a microsecond is below what is kept.
    expect(parseCallOutcomeText(formatCallOutcome({ upstream_ms: 0.0004 }))).toEqual({ upstream_ms: 0 });
    // Milliseconds, as services wrote them before, so a rolling upgrade keeps its reports.
    expect(parseCallOutcomeText("a=1&ums=412.5&tt=3.25")).toEqual({ attempts: 1, upstream_ms: 412.5, ttft_ms: 3.25 });
  });

  it("reads the JSON that services wrote before, so a rolling upgrade keeps its reports", () => {
    const outcome = { provider: "anthropic", attempts: 1, usage: { input_tokens: 9 } };
    expect(parseCallOutcomeText(JSON.stringify(outcome))).toEqual(outcome);
    expect(readIntoRow(JSON.stringify(outcome))).toEqual({ found: true, record: { ...bare, outcome } });
    expect(readIntoRow("{not json")).toEqual({ found: false, record: bare });
    expect(parseCallOutcomeText("{not json")).toBeUndefined();
    expect(parseCallOutcomeText("[1,2]")).toBeUndefined();
  });

  it("skips what it cannot read rather than guessing", () => {
    const parsed = parseCallOutcomeText("p=ok&a=many&in=&out=7&zz=1&u.bogus=3&u.pages=2&um=%E0%A4%A&=5&noequals");
    expect(parsed).toEqual({ provider: "ok", usage: { output_tokens: 7 }, units: { pages: 2 } });
    // Shaped but unchecked: a negative count reaches the ledger, whose check refuses it.
    const negative = parseCallOutcomeText("in=-5");
    expect(negative).toEqual({ usage: { input_tokens: -5 } });
    expect(CallOutcome.safeParse(negative).success).toBe(false);
  });

  it("reads any text exactly as the format's plain rules do", () => {
    // Pieces that make good, bad, repeated and unknown pairs, joined at random (a fixed seed).
    const pieces = [
      "p=openai",
      "um=gpt%2D4o",
      "m=%E0%A4%A",
      "a=2",
      "a=x",
      "ums=0.412",
      "uus=412",
      "uus=1.5",
      "tus=-7",
      "tt=",
      "in=12",
      "out=-3",
      "cr=1e3",
      "cw=Infinity",
      "rs=7",
      "u.pages=2",
      "u.bogus=1",
      "zz=1",
      "=5",
      "noequals",
      "",
      "p=",
      "um=a=b",
      "in=0x10",
      "t=12",
      "t=-1",
      "t=x",
      "tt=4",
    ];
    let seed = 42;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
    for (let n = 0; n < 2_000; n++) {
      const text = Array.from({ length: 1 + (next() % 6) }, () => pieces[next() % pieces.length]).join("&");
      const plain = plainRead(text);
      expect(parseCallOutcomeText(text), text).toEqual(plain);
      expect(outcomeTokens(text), text).toBe(plainTokens(text));
      // Into a usage row: the same outcome in the outcome's places, the row's other fields untouched.
      const { found, record } = readIntoRow(text);
      expect(found, text).toBe(plain !== undefined);
      expect(record, text).toEqual(plain === undefined ? bare : { ...bare, outcome: plain });
    }
  });

  it("carries the answer's total tokens for the token limits beside the outcome, not in it", () => {
    const outcome: CallOutcome = { provider: "openai", upstream_model: "gpt-4o-mini", attempts: 1, ttft_ms: 9, usage: { input_tokens: 12, output_tokens: 30 } };
    const text = formatCallOutcome(outcome, 42);
    expect(text).toBe("p=openai&um=gpt-4o-mini&a=1&tus=9000&in=12&out=30&t=42");
    expect(outcomeTokens(text)).toBe(42);
    expect(parseCallOutcomeText(text)).toEqual(outcome);
    expect(formatCallOutcome({}, 0)).toBe("t=0");
    expect(outcomeTokens("t=0")).toBe(0);
    // Without a total, or with one that is not a count, there is none to read.
    expect(outcomeTokens(formatCallOutcome(outcome))).toBeUndefined();
    expect(outcomeTokens("p=x&tt=5")).toBeUndefined();
    expect(outcomeTokens("t=-3&a=1")).toBeUndefined();
    expect(outcomeTokens(undefined)).toBeUndefined();
  });
});

/** The total tokens as the format's plain rules read them: the first `t` pair, when it is a count. */
function plainTokens(text: string): number | undefined {
  const pair = text.split("&").find((p) => p.startsWith("t="));
  if (pair === undefined) return undefined;
  const raw = pair.slice(2);
  const value = Number(raw);
  return raw !== "" && Number.isFinite(value) && value >= 0 ? value : undefined;
}
