import type { Db } from "@gw/db";
import { GatewayError } from "@gw/errors";
import { createLogger } from "@gw/logger";
import { testPrincipal } from "../testing/principal";
import { describe, expect, it } from "vitest";
import { IdentityStore, type KeyPrincipal } from "../store/identity-store";
import { Authenticator, defaultAuthenticatorLimits, type AuthenticatorLimits } from "./authenticator";
import { addressKey } from "./failure-guard";
import { generateKey, hashKey, keyPrefix, randomBase62 } from "./keys";

/**
 * What unknown keys cost: cache room, store connections and, per client address, a failure budget.
 * The store is an in-memory fake that counts its lookups and how many run at once.
 */

const logger = createLogger({ service: "test", level: "silent" });

function principal(keyId: string): KeyPrincipal {
  return testPrincipal({ keyId }, { name: "acme" });
}

class FakeStore extends IdentityStore {
  readonly rows = new Map<string, KeyPrincipal>();
  lookups = 0;
  running = 0;
  peak = 0;
  /** When set, each lookup waits for it, so a burst really overlaps. */
  gate: Promise<void> | undefined;

  constructor() {
    super({} as Db); // never queried: findByHash is answered from `rows`
  }

  add(keyId: string): string {
    const { secret, hash } = generateKey();
    this.rows.set(hash, principal(keyId));
    return secret;
  }

  override async findByHash(hash: string): Promise<KeyPrincipal | undefined> {
    this.lookups++;
    this.running++;
    this.peak = Math.max(this.peak, this.running);
    try {
      if (this.gate) await this.gate;
      return this.rows.get(hash);
    } finally {
      this.running--;
    }
  }
}

function setup(limits: Partial<AuthenticatorLimits> = {}) {
  const store = new FakeStore();
  const clock = { now: 1_700_000_000_000 };
  // The sizes ingress runs with (service.ts): 100,000 known keys.
  const auth = new Authenticator(
    store,
    { ttlMs: 10_000, negativeTtlMs: 5_000, maxStaleMs: 600_000, maxEntries: 100_000, maxNegativeEntries: 10_000, now: () => clock.now },
    logger,
    { ...defaultAuthenticatorLimits, ...limits },
  );
  return { store, auth, clock };
}

const noFailureBudget = { failures: { maxFailures: 0, windowMs: 60_000, maxAddresses: 10 } };
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
const randomKey = () => keyPrefix + randomBase62(40);

async function authError(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected authentication to fail");
}

describe("Authenticator: unknown keys and the cache", () => {
  it("when 100,000 random keys arrive after a real key, then the real key is still served from the cache without a store query", async () => {
    const { auth, store } = setup(noFailureBudget);
    const real = store.add("key_real");
    await auth.authenticate(bearer(real), "198.51.100.1");
    expect(store.lookups).toBe(1);
    const codes = new Set<string>();
    for (let i = 0; i < 100_000; i++) codes.add((await authError(auth.authenticate(bearer(randomKey()), "10.0.0.1"))).code);
    expect([...codes]).toEqual(["invalid_api_key"]);
    expect(store.lookups).toBe(100_001);
    const { identity } = await auth.authenticate(bearer(real), "198.51.100.1");
    expect(identity.key_id).toBe("key_real");
    expect(store.lookups).toBe(100_001); // no query: the flood did not push the real key out
    expect(auth.cache.size).toBe(1);
    expect(auth.cache.negativeSize).toBe(10_000); // the unknown keys' own, smaller bound
  });

  it("when a key that was unknown is created, then the cache learns it on its next lookup and holds it apart from unknown ones", async () => {
    const { auth, store, clock } = setup(noFailureBudget);
    const { secret, hash } = generateKey();
    await authError(auth.authenticate(bearer(secret), "198.51.100.1"));
    store.rows.set(hash, principal("key_late"));
    clock.now += 5_001; // the unknown-key answer has expired
    expect((await auth.authenticate(bearer(secret), "198.51.100.1")).identity.key_id).toBe("key_late");
    expect([auth.cache.size, auth.cache.negativeSize]).toEqual([1, 0]);
    expect(hashKey(secret)).toBe(hash);
  });
});

describe("Authenticator: concurrent lookups of uncached keys", () => {
  it("when 500 different unknown keys arrive at once, then at most the bound reach the store together and the overflow gets a retryable 503 at once", async () => {
    const { auth, store } = setup({ ...noFailureBudget, lookups: { concurrency: 4, maxQueue: 100, maxWaitMs: 60_000 } });
    let open = () => {};
    store.gate = new Promise<void>((resolve) => (open = resolve));
    const calls = Array.from({ length: 500 }, (_, i) => authError(auth.authenticate(bearer(randomKey()), `10.1.0.${i % 250}`)));
    // The 396 past the running four and the hundred waiting are answered before the store is.
    const refused = await Promise.all(calls.slice(104));
    expect(store.peak).toBe(4);
    expect([auth.lookups.inFlight, auth.lookups.waiting]).toEqual([4, 100]);
    for (const err of refused) {
      expect([err.code, err.status, err.retryable, err.headers["retry-after"]]).toEqual(["upstream_unavailable", 503, true, "1"]);
    }
    open();
    const served = await Promise.all(calls.slice(0, 104));
    expect(served.every((err) => err.code === "invalid_api_key")).toBe(true);
    expect(store.peak).toBe(4);
    expect(store.lookups).toBe(104);
  });

  it("when the store is too slow to give a waiting lookup its turn, then the caller gets a 503 instead of hanging", async () => {
    const { auth, store } = setup({ ...noFailureBudget, lookups: { concurrency: 1, maxQueue: 10, maxWaitMs: 20 } });
    let open = () => {};
    store.gate = new Promise<void>((resolve) => (open = resolve));
    const first = authError(auth.authenticate(bearer(randomKey()), "10.2.0.1"));
    const waiting = await authError(auth.authenticate(bearer(randomKey()), "10.2.0.2"));
    expect([waiting.code, waiting.status, waiting.headers["retry-after"]]).toEqual(["upstream_unavailable", 503, "1"]);
    expect(auth.lookups.waiting).toBe(0);
    open();
    expect((await first).code).toBe("invalid_api_key");
  });

  it("when lookups are saturated, then a real key seen before its TTL ended is served from the stale cache", async () => {
    const { auth, store, clock } = setup({ ...noFailureBudget, lookups: { concurrency: 1, maxQueue: 0, maxWaitMs: 60_000 } });
    const real = store.add("key_real");
    await auth.authenticate(bearer(real), "198.51.100.1");
    clock.now += 10_001; // past the TTL: the next call must ask the store
    let open = () => {};
    store.gate = new Promise<void>((resolve) => (open = resolve));
    const flood = authError(auth.authenticate(bearer(randomKey()), "10.3.0.1"));
    expect((await auth.authenticate(bearer(real), "198.51.100.1")).identity.key_id).toBe("key_real");
    open();
    await flood;
  });
});

describe("Authenticator: failed attempts per client address", () => {
  const budget = { failures: { maxFailures: 3, windowMs: 60_000, maxAddresses: 100 } };
  const attacker = "203.0.113.9";

  it("when an address has failed N times, then its next unknown key is a 429 with retry-after and no store query, until the window passes", async () => {
    const { auth, store, clock } = setup(budget);
    await authError(auth.authenticate({}, attacker)); // missing
    await authError(auth.authenticate(bearer("gw_live_short"), attacker)); // malformed
    expect((await authError(auth.authenticate(bearer(randomKey()), attacker))).code).toBe("invalid_api_key"); // unknown
    expect(store.lookups).toBe(1);

    clock.now += 20_000;
    const err = await authError(auth.authenticate(bearer(randomKey()), attacker));
    expect([err.code, err.status, err.retryable, err.headers["retry-after"]]).toEqual(["too_many_auth_failures", 429, true, "40"]);
    expect(err.toEnvelope("anthropic").error.type).toBe("rate_limit_error");
    expect(err.toEnvelope("openai").error).toMatchObject({ type: "rate_limit_error", code: "too_many_auth_failures" });
    expect((await authError(auth.authenticate({}, attacker))).code).toBe("too_many_auth_failures");
    expect(store.lookups).toBe(1);

    clock.now += 40_000; // the window has passed
    expect((await authError(auth.authenticate(bearer(randomKey()), attacker))).code).toBe("invalid_api_key");
    expect(store.lookups).toBe(2);
  });

  it("when an address is over its budget, then a key already cached still works from it, while an uncached one waits", async () => {
    const { auth, store } = setup(budget);
    const cached = store.add("key_cached");
    const uncached = store.add("key_uncached");
    await auth.authenticate(bearer(cached), "198.51.100.1"); // cached via another address
    for (let i = 0; i < 3; i++) await authError(auth.authenticate(bearer(randomKey()), attacker));
    const lookups = store.lookups;
    expect((await auth.authenticate(bearer(cached), attacker)).identity.key_id).toBe("key_cached"); // a shared NAT
    expect((await authError(auth.authenticate(bearer(uncached), attacker))).code).toBe("too_many_auth_failures");
    expect(store.lookups).toBe(lookups);
  });

  it("when an address is over its budget and a key it used has passed its cache TTL, then the key is read again and still works", async () => {
    const { auth, store, clock } = setup(budget);
    const cached = store.add("key_cached");
    await auth.authenticate(bearer(cached), attacker);
    for (let i = 0; i < 3; i++) await authError(auth.authenticate(bearer(randomKey()), attacker));
    clock.now += 10_001; // past the 10 s TTL, within the budget's window
    const lookups = store.lookups;
    expect((await auth.authenticate(bearer(cached), attacker)).identity.key_id).toBe("key_cached");
    expect(store.lookups).toBe(lookups + 1);
    expect((await authError(auth.authenticate(bearer(randomKey()), attacker))).code).toBe("too_many_auth_failures");
  });

  it("when one address is over its budget, then other addresses are not affected", async () => {
    const { auth } = setup(budget);
    for (let i = 0; i < 3; i++) await authError(auth.authenticate(bearer(randomKey()), attacker));
    expect((await authError(auth.authenticate(bearer(randomKey()), attacker))).code).toBe("too_many_auth_failures");
    expect((await authError(auth.authenticate(bearer(randomKey()), "203.0.113.10"))).code).toBe("invalid_api_key");
  });

  it("when a revoked key is used, then it counts as a failure; a disabled key does not", async () => {
    const { auth, store } = setup(budget);
    const revoked = store.add("key_revoked");
    store.rows.get(hashKey(revoked))!.keyStatus = "revoked";
    const disabled = store.add("key_disabled");
    store.rows.get(hashKey(disabled))!.keyStatus = "disabled";
    for (let i = 0; i < 5; i++) expect((await authError(auth.authenticate(bearer(disabled), attacker))).code).toBe("key_disabled");
    for (let i = 0; i < 3; i++) expect((await authError(auth.authenticate(bearer(revoked), attacker))).code).toBe("invalid_api_key");
    expect((await authError(auth.authenticate(bearer(randomKey()), attacker))).code).toBe("too_many_auth_failures");
  });

  it("when addresses of one IPv6 /64 fail, then they share one budget; an IPv4-mapped address is its IPv4 address", async () => {
    const { auth } = setup(budget);
    for (const host of ["1", "2", "abcd"]) await authError(auth.authenticate(bearer(randomKey()), `2001:db8:1:2::${host}`));
    expect((await authError(auth.authenticate(bearer(randomKey()), "2001:db8:1:2:ffff::9"))).code).toBe("too_many_auth_failures");
    expect((await authError(auth.authenticate(bearer(randomKey()), "2001:db8:1:3::1"))).code).toBe("invalid_api_key");

    for (let i = 0; i < 3; i++) await authError(auth.authenticate({}, "192.0.2.5"));
    expect((await authError(auth.authenticate({}, "::ffff:192.0.2.5"))).code).toBe("too_many_auth_failures");
  });

  it("when addresses are written in their various forms, then each maps to its budget's unit", () => {
    expect(addressKey("198.51.100.7")).toBe("198.51.100.7");
    expect(addressKey("::FFFF:198.51.100.7")).toBe("198.51.100.7");
    expect(addressKey("2001:0db8:0001:0002:0003:0004:0005:0006")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressKey("::1")).toBe("::1");
    expect(addressKey("::ffff:c633:6407")).toBe("::ffff:c633:6407");
  });

  it("when many addresses fail, then only the most recent ones are remembered", async () => {
    const { auth } = setup({ failures: { maxFailures: 1, windowMs: 60_000, maxAddresses: 100 } });
    for (let i = 0; i < 1_000; i++) await authError(auth.authenticate({}, `10.9.${i >> 8}.${i & 255}`));
    expect(auth.failures.size).toBe(100);
  });
});
