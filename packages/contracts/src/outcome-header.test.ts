import { describe, expect, it } from "vitest";
import { formatCallOutcome, parseCallOutcomeText } from "./outcome-header";
import { CallOutcome } from "./usage";

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
  });

  it("leaves absent fields absent", () => {
    expect(parseCallOutcomeText(formatCallOutcome({ provider: "p", attempts: 1 }))).toEqual({ provider: "p", attempts: 1 });
    expect(formatCallOutcome({})).toBe("");
    expect(parseCallOutcomeText("")).toBeUndefined();
    expect(parseCallOutcomeText(undefined)).toBeUndefined();
  });

  it("reads the JSON that services wrote before, so a rolling upgrade keeps its reports", () => {
    const outcome = { provider: "anthropic", attempts: 1, usage: { input_tokens: 9 } };
    expect(parseCallOutcomeText(JSON.stringify(outcome))).toEqual(outcome);
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
});
