import { describe, expect, it } from "vitest";
import { CircuitBreakers } from "./circuit-breaker";

describe("CircuitBreakers", () => {
  const make = () => {
    let t = 1_000;
    const breakers = new CircuitBreakers({ threshold: 3, cooldownMs: 10_000, now: () => t });
    return { breakers, advance: (ms: number) => (t += ms) };
  };

  it("when a deployment fails fewer times in a row than the threshold, then it stays allowed, and a success resets the count", () => {
    const { breakers } = make();
    breakers.failed("a");
    breakers.failed("a");
    expect(breakers.allow("a")).toBe(true);
    breakers.succeeded("a");
    breakers.failed("a");
    breakers.failed("a");
    expect(breakers.allow("a")).toBe(true);
  });

  it("when it reaches the threshold, then it is skipped for the cool-down, and other deployments are not", () => {
    const { breakers, advance } = make();
    for (let i = 0; i < 3; i++) breakers.failed("a");
    expect(breakers.allow("a")).toBe(false);
    expect(breakers.waitMs("a")).toBe(10_000);
    expect(breakers.allow("b")).toBe(true);
    advance(9_999);
    expect(breakers.allow("a")).toBe(false);
  });

  it("when the cool-down is over, then exactly one trial goes through; its success closes the circuit", () => {
    const { breakers, advance } = make();
    for (let i = 0; i < 3; i++) breakers.failed("a");
    advance(10_000);
    expect(breakers.allow("a")).toBe(true);
    expect(breakers.allow("a")).toBe(false); // the trial is still in flight
    breakers.succeeded("a");
    expect(breakers.allow("a")).toBe(true);
    expect(breakers.allow("a")).toBe(true);
  });

  it("when the trial fails, then the circuit opens again for a whole cool-down", () => {
    const { breakers, advance } = make();
    for (let i = 0; i < 3; i++) breakers.failed("a");
    advance(10_000);
    expect(breakers.allow("a")).toBe(true);
    breakers.failed("a");
    expect(breakers.allow("a")).toBe(false);
    expect(breakers.waitMs("a")).toBe(10_000);
  });

  it("when a trial is abandoned, then the next call is the trial, and the failure count stands", () => {
    const { breakers, advance } = make();
    for (let i = 0; i < 3; i++) breakers.failed("a");
    advance(10_000);
    expect(breakers.allow("a")).toBe(true);
    expect(breakers.allow("a")).toBe(false); // one trial at a time
    breakers.abandoned("a");
    expect(breakers.allow("a")).toBe(true);
    breakers.failed("a");
    expect(breakers.waitMs("a")).toBe(10_000);
  });
});
