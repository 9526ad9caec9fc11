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

  it("when a workspace's own credential fails, then only that credential on that deployment opens, never the shared breaker", () => {
    const { breakers } = make();
    const own = breakers.ownCredential("a", "sk-ws-1");
    for (let i = 0; i < 3; i++) own.failed();
    expect(breakers.ownCredential("a", "sk-ws-1").allow()).toBe(false);
    expect(breakers.ownCredential("a", "sk-ws-1").waitMs()).toBe(10_000);
    expect(breakers.allow("a")).toBe(true); // every other tenant's calls
    expect(breakers.ownCredential("a", "sk-ws-2").allow()).toBe(true); // another workspace, or a rotated key
    expect(breakers.ownCredential("b", "sk-ws-1").allow()).toBe(true); // another deployment
    breakers.ownCredential("a", "sk-ws-1").succeeded();
    expect(breakers.ownCredential("a", "sk-ws-1").allow()).toBe(true);
  });

  it("when more workspace credentials fail than it keeps, then the oldest is forgotten", () => {
    const breakers = new CircuitBreakers({ threshold: 1, cooldownMs: 10_000, now: () => 0, maxOwnCredentials: 2 });
    for (const key of ["k1", "k2", "k3"]) breakers.ownCredential("a", key).failed();
    expect(["k1", "k2", "k3"].map((key) => breakers.ownCredential("a", key).allow())).toEqual([true, false, false]);
  });

  it("when a deployment's breaker opens, lets a trial through, then closes, then each change is told, and a workspace credential's never is", () => {
    let t = 0;
    const changes: string[] = [];
    const breakers = new CircuitBreakers({ threshold: 2, cooldownMs: 100, now: () => t, onState: (d, s) => changes.push(`${d}:${s}`) });
    breakers.failed("a");
    breakers.succeeded("a"); // below the threshold: it never opened, so nothing changed
    breakers.failed("a");
    breakers.failed("a");
    t += 100;
    breakers.allow("a");
    breakers.failed("a");
    t += 100;
    breakers.allow("a");
    breakers.succeeded("a");
    const own = breakers.ownCredential("a", "sk-own");
    own.failed();
    own.failed();
    expect(changes).toEqual(["a:open", "a:half_open", "a:open", "a:half_open", "a:closed"]);
  });
});
