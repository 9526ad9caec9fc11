import { describe, expect, it } from "vitest";
import type { KeyPrincipal } from "../store/identity-store";
import { testPrincipal } from "../testing/principal";
import { IdentityCache, type IdentityCacheOptions } from "./identity-cache";

function principal(keyId: string, workspaceId = "ws_1"): KeyPrincipal {
  return testPrincipal({ keyId }, { id: workspaceId, name: "acme", tools: ["webtool", "serptool"] });
}

function setup(overrides: Partial<IdentityCacheOptions> = {}) {
  const clock = { now: 1_000_000 };
  const cache = new IdentityCache({
    ttlMs: 1_000,
    negativeTtlMs: 100,
    maxStaleMs: 60_000,
    maxEntries: 100,
    now: () => clock.now,
    ...overrides,
  });
  return { cache, clock };
}

describe("IdentityCache: freshness", () => {
  it("when an entry is younger than the TTL, then it is fresh; at the TTL it is not", () => {
    const { cache, clock } = setup();
    const p = principal("key_1");
    cache.set("h1", p);
    expect(cache.getFresh("h1")).toEqual({ principal: p });
    clock.now += 999;
    expect(cache.getFresh("h1")?.principal).toBe(p);
    clock.now += 1;
    expect(cache.getFresh("h1")).toBeUndefined();
  });

  it("when a hash was never set, then there is nothing fresh or stale", () => {
    const { cache } = setup();
    expect(cache.getFresh("nope")).toBeUndefined();
    expect(cache.getStale("nope")).toBeUndefined();
  });

  it("when an unknown key is cached, then it is fresh only for the negative TTL and reads as 'known unknown'", () => {
    const { cache, clock } = setup();
    cache.set("h-unknown", undefined);
    const hit = cache.getFresh("h-unknown");
    expect(hit).toBeDefined();
    expect(hit?.principal).toBeUndefined();
    clock.now += 99;
    expect(cache.getFresh("h-unknown")).toBeDefined();
    clock.now += 1;
    expect(cache.getFresh("h-unknown")).toBeUndefined();
  });

  it("when an entry is set again, then its TTL restarts from the new time", () => {
    const { cache, clock } = setup();
    cache.set("h1", principal("key_1"));
    clock.now += 900;
    cache.set("h1", principal("key_1b"));
    clock.now += 900;
    expect(cache.getFresh("h1")?.principal?.keyId).toBe("key_1b");
  });
});

describe("IdentityCache: stale serving", () => {
  it("when an entry is past its TTL but within maxStale, then getStale still returns it", () => {
    const { cache, clock } = setup();
    const p = principal("key_1");
    cache.set("h1", p);
    clock.now += 30_000;
    expect(cache.getFresh("h1")).toBeUndefined();
    expect(cache.getStale("h1")).toBe(p);
    clock.now += 30_000;
    expect(cache.getStale("h1")).toBeUndefined();
  });

  it("when the entry is a negative one, then getStale never returns it", () => {
    const { cache } = setup();
    cache.set("h-unknown", undefined);
    expect(cache.getStale("h-unknown")).toBeUndefined();
  });
});

describe("IdentityCache: bound", () => {
  it("when more than maxEntries are set, then the least recently used goes first", () => {
    const { cache } = setup({ maxEntries: 3 });
    cache.set("a", principal("key_a"));
    cache.set("b", principal("key_b"));
    cache.set("c", principal("key_c"));
    expect(cache.getFresh("a")).toBeDefined(); // a is now the most recent; b is the oldest
    cache.set("d", principal("key_d"));
    expect(cache.size).toBe(3);
    expect(cache.getFresh("b")).toBeUndefined();
    expect(cache.getStale("b")).toBeUndefined();
    for (const hash of ["a", "c", "d"]) expect(cache.getFresh(hash), hash).toBeDefined();
  });

  it("when many entries are set, then size never exceeds maxEntries", () => {
    const { cache } = setup({ maxEntries: 10 });
    for (let i = 0; i < 100; i++) cache.set(`h${i}`, i % 3 ? principal(`key_${i}`) : undefined);
    expect(cache.size).toBe(10);
    expect(cache.negativeSize).toBe(1); // a tenth of maxEntries unless told
    expect(cache.getFresh("h99")).toBeDefined();
    expect(cache.getFresh("h0")).toBeUndefined();
  });

  it("when far more unknown keys than known ones are set, then no known key is evicted and unknown ones keep their own bound", () => {
    const { cache } = setup({ maxEntries: 3, maxNegativeEntries: 2 });
    cache.set("a", principal("key_a"));
    cache.set("b", principal("key_b"));
    for (let i = 0; i < 1_000; i++) cache.set(`unknown-${i}`, undefined);
    expect([cache.size, cache.negativeSize]).toEqual([2, 2]);
    for (const hash of ["a", "b"]) expect(cache.getFresh(hash)?.principal?.keyId).toBe(`key_${hash}`);
    expect(cache.getFresh("unknown-999")).toEqual({ principal: undefined });
    expect(cache.getFresh("unknown-997")).toBeUndefined();
  });

  it("when a key's answer changes between known and unknown, then it is held in one store only", () => {
    const { cache } = setup();
    cache.set("h", undefined);
    cache.set("h", principal("key_h"));
    expect([cache.size, cache.negativeSize]).toEqual([1, 0]);
    cache.set("h", undefined);
    expect([cache.size, cache.negativeSize]).toEqual([0, 1]);
    expect(cache.getStale("h")).toBeUndefined();
  });

  it("when an existing entry is set again at the limit, then nothing else is evicted", () => {
    const { cache } = setup({ maxEntries: 2 });
    cache.set("a", principal("key_a"));
    cache.set("b", principal("key_b"));
    cache.set("a", principal("key_a"));
    expect(cache.size).toBe(2);
    expect(cache.getFresh("b")).toBeDefined();
  });
});

describe("IdentityCache: invalidation", () => {
  it("when a key id is invalidated, then only that key's entries go, fresh and stale", () => {
    const { cache } = setup();
    cache.set("h1", principal("key_1", "ws_1"));
    cache.set("h2", principal("key_2", "ws_1"));
    expect(cache.invalidate("key", "key_1")).toBe(1);
    expect(cache.getFresh("h1")).toBeUndefined();
    expect(cache.getStale("h1")).toBeUndefined();
    expect(cache.getFresh("h2")).toBeDefined();
  });

  it("when a workspace is invalidated, then every key of that workspace goes and others stay", () => {
    const { cache } = setup();
    cache.set("h1", principal("key_1", "ws_1"));
    cache.set("h2", principal("key_2", "ws_1"));
    cache.set("h3", principal("key_3", "ws_2"));
    cache.set("h-unknown", undefined);
    expect(cache.invalidate("workspace", "ws_1")).toBe(2);
    expect(cache.getFresh("h1")).toBeUndefined();
    expect(cache.getFresh("h2")).toBeUndefined();
    expect(cache.getFresh("h3")).toBeDefined();
    expect(cache.getFresh("h-unknown")).toBeDefined();
  });

  it("when an id matches nothing, then nothing is dropped", () => {
    const { cache } = setup();
    cache.set("h1", principal("key_1", "ws_1"));
    expect(cache.invalidate("key", "ws_1")).toBe(0); // a workspace id is not a key id
    expect(cache.invalidate("workspace", "key_1")).toBe(0);
    expect(cache.size).toBe(1);
  });

  it("when negative entries are cleared, then known keys stay", () => {
    const { cache } = setup();
    cache.set("h1", principal("key_1"));
    cache.set("n1", undefined);
    cache.set("n2", undefined);
    cache.clearNegative();
    expect([cache.size, cache.negativeSize]).toEqual([1, 0]);
    expect(cache.getFresh("n1")).toBeUndefined();
    expect(cache.getFresh("h1")).toBeDefined();
  });
});
