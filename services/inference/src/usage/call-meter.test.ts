import { formatCallOutcome, parseCallOutcomeText, usageUnitNames } from "@gw/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallMeter } from "./call-meter";

/** The meter's times set to given figures rather than the clock's, so any double can be tried. */
function setTimes(meter: CallMeter, upstreamMs: number, ttftMs?: number): void {
  const fields = meter as unknown as { attemptStarted: number; upstreamMs: number; ttftMs: number | undefined };
  fields.attemptStarted = 0;
  fields.upstreamMs = upstreamMs;
  fields.ttftMs = ttftMs;
}

/** A meter driven through what a call can do to it, in any combination. */
const meters = fc
  .record({
    requestModel: fc.option(fc.constantFrom("gpt", "my model/ü", "a&b=c"), { nil: undefined }),
    showModel: fc.boolean(),
    attempts: fc.array(fc.tuple(fc.constantFrom("openai", "anthropic", "p q"), fc.constantFrom("gpt-4o-mini", "claude-sonnet-4-5", "m%1")), {
      maxLength: 3,
    }),
    upstreamMs: fc.double({ min: 0, max: 600_000, noNaN: true }),
    ttftMs: fc.option(fc.double({ min: 0, max: 600_000, noNaN: true }), { nil: undefined }),
    usage: fc.option(
      fc.record(
        {
          input_tokens: fc.nat(),
          output_tokens: fc.nat(),
          cached_input_tokens: fc.nat(),
          cache_write_tokens: fc.nat(),
          reasoning_tokens: fc.nat(),
        },
        { requiredKeys: [] },
      ),
      { nil: undefined },
    ),
    units: fc.array(fc.tuple(fc.constantFrom(...usageUnitNames), fc.double({ min: 0, max: 1e6, noNaN: true })), { maxLength: 3 }),
    totalTokens: fc.option(fc.nat(), { nil: undefined }),
  })
  .map((m) => {
    const meter = new CallMeter();
    meter.requestModel = m.requestModel;
    meter.showModel = m.showModel;
    for (const [provider, model] of m.attempts) meter.attemptStart(provider, model);
    setTimes(meter, m.upstreamMs, m.ttftMs);
    if (m.usage) meter.tokens(m.usage);
    for (const [name, value] of m.units) meter.unit(name, value);
    return { meter, totalTokens: m.totalTokens };
  });

describe("when a call meter writes its outcome header", () => {
  it("then the text is what formatCallOutcome writes for the meter's outcome, whatever the call did", () => {
    fc.assert(
      fc.property(meters, ({ meter, totalTokens }) => {
        expect(meter.outcomeText(totalTokens)).toBe(formatCallOutcome(meter.outcome(), totalTokens));
      }),
      { numRuns: 500 },
    );
  });

  it("then ingress reads back the deployment, attempts, times to the microsecond and usage", () => {
    const meter = new CallMeter();
    meter.requestModel = "whisper";
    meter.showModel = true;
    meter.attemptStart("oa", "whisper-1");
    setTimes(meter, 412.5004);
    meter.tokens({ input_tokens: 1200, output_tokens: 80, cached_input_tokens: 1024 });
    meter.unit("audio_seconds", 12.5);
    expect(meter.outcomeText(1280)).toBe("m=whisper&p=oa&um=whisper-1&a=1&uus=412500&in=1200&out=80&cr=1024&u.audio_seconds=12.5&t=1280");
    expect(parseCallOutcomeText(meter.outcomeText())).toEqual({
      model: "whisper",
      provider: "oa",
      upstream_model: "whisper-1",
      attempts: 1,
      upstream_ms: 412.5,
      usage: { input_tokens: 1200, output_tokens: 80, cached_input_tokens: 1024 },
      units: { audio_seconds: 12.5 },
    });
  });
});
