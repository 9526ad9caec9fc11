import { connect, createServer as createNetServer, type AddressInfo } from "node:net";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@gw/logger";
import { testRedisUrl, uniquePrefix } from "@gw/testkit";
import { LeasingLimiter } from "./leasing-limiter";
import { FakeClock, limiterContract } from "./limiter-contract";
import { MemoryLimiter } from "./memory-limiter";
import { RedisLimiter } from "./redis-limiter";
import type { AdmitRequest, Ticket, Unused } from "./types";

const logger = createLogger({ service: "test", level: "silent" });
let url: string;
const prefix = uniquePrefix("limits");

beforeAll(async () => {
  url = await testRedisUrl();
});

afterAll(async () => {
  const client = createClient({ url });
  await client.connect();
  for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
    if (keys.length > 0) await client.del(keys);
  }
  client.destroy();
});

async function connected(limiter: RedisLimiter): Promise<RedisLimiter> {
  limiter.connect();
  for (let i = 0; i < 100; i++) {
    try {
      await limiter.ping();
      return limiter;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  throw new Error("redis did not become ready");
}

limiterContract("Redis", (options) => connected(new RedisLimiter({ ...options, url, prefix, timeoutMs: 2_000, logger })));

describe("Redis limiter keys", () => {
  it("when a key is charged, then both hashes share the workspace's hash tag and expire after the window", async () => {
    const limiter = await connected(new RedisLimiter({ windowMs: 60_000, buckets: 60, url, prefix, timeoutMs: 2_000, logger }));
    const client = createClient({ url });
    await client.connect();
    try {
      await limiter.admit({ workspaceId: "ws_tag", keyId: "key_tag", workspace: { requests: 5, tokens: 50 }, key: { requests: 5, tokens: 50 }, tokens: 7 });
      const keys = (await client.keys(`${prefix}rl:{ws_tag}*`)).sort();
      expect(keys).toEqual([`${prefix}rl:{ws_tag}:key:key_tag`, `${prefix}rl:{ws_tag}:ws`]);
      const ttl = await client.pTTL(keys[1] as string);
      expect(ttl).toBeGreaterThan(59_000);
      expect(ttl).toBeLessThanOrEqual(61_000);
      expect(await client.hGet(keys[1] as string, "t")).toBe("7");
    } finally {
      client.destroy();
      await limiter.close();
    }
  });

  it("when a bucket is charged again, then the expiry stands; when a new bucket is first charged, then it is renewed", async () => {
    const clock = new FakeClock();
    const limiter = await connected(new RedisLimiter({ windowMs: 60_000, buckets: 60, now: clock.now, url, prefix, timeoutMs: 2_000, logger }));
    const client = createClient({ url });
    await client.connect();
    const request = { workspaceId: "ws_ttl", keyId: "key_ttl", workspace: { requests: 50, tokens: 500 }, key: { requests: 50, tokens: 500 }, tokens: 3 };
    const ttls = () => Promise.all([client.pTTL(`${prefix}rl:{ws_ttl}:ws`), client.pTTL(`${prefix}rl:{ws_ttl}:key:key_ttl`)]);
    try {
      await limiter.admit(request);
      for (const ttl of await ttls()) expect(ttl).toBeGreaterThan(60_000); // the window and one bucket: 61 s
      await new Promise((r) => setTimeout(r, 300));
      await limiter.admit(request); // same bucket: the first charge's expiry already outlives it
      for (const ttl of await ttls()) expect(ttl).toBeLessThanOrEqual(61_000 - 300);
      clock.advance(1_000);
      await limiter.admit(request);
      for (const ttl of await ttls()) expect(ttl).toBeGreaterThan(61_000 - 250);
    } finally {
      client.destroy();
      await limiter.close();
    }
  });

  it("when Redis is unreachable, then admit rejects at once instead of queueing", async () => {
    const limiter = new RedisLimiter({ windowMs: 60_000, buckets: 60, url: "redis://127.0.0.1:1", prefix, timeoutMs: 2_000, logger });
    limiter.connect();
    const started = Date.now();
    await expect(
      limiter.admit({ workspaceId: "ws_x", keyId: "key_x", workspace: { requests: 5, tokens: 50 }, key: { requests: 5, tokens: 50 }, tokens: 0 }),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(1_000);
    await limiter.close();
  });
});

describe("Redis limiter settlements", () => {
  const limits = { workspace: { requests: 100, tokens: 10_000 }, key: { requests: 100, tokens: 10_000 } };

  it("when another key of the workspace is admitted next, then the waiting settlement rides along in that call", async () => {
    const limiter = await connected(new RedisLimiter({ windowMs: 60_000, buckets: 60, url, prefix, timeoutMs: 2_000, logger }));
    const client = createClient({ url });
    await client.connect();
    try {
      const a = await limiter.admit({ workspaceId: "ws_ride", keyId: "key_a", ...limits, tokens: 500 });
      if (!a.allowed) throw new Error("denied");
      await limiter.settle(a.ticket, 120);
      const before = await client.hGet(`${prefix}rl:{ws_ride}:key:key_a`, "t");
      expect(before).toBe("500"); // not sent yet
      const b = await limiter.admit({ workspaceId: "ws_ride", keyId: "key_b", ...limits, tokens: 30 });
      expect(b).toMatchObject({ allowed: true, status: { tokens: { remaining: 10_000 - 120 - 30 } } });
      expect(await client.hGet(`${prefix}rl:{ws_ride}:key:key_a`, "t")).toBe("120");
      expect(await client.hGet(`${prefix}rl:{ws_ride}:ws`, "t")).toBe("150");
    } finally {
      client.destroy();
      await limiter.close();
    }
  });

  it("when no admission follows, then waiting settlements are sent on their own shortly after, and on close", async () => {
    const limiter = await connected(new RedisLimiter({ windowMs: 60_000, buckets: 60, url, prefix, timeoutMs: 2_000, logger }));
    const client = createClient({ url });
    await client.connect();
    try {
      const a = await limiter.admit({ workspaceId: "ws_alone", keyId: "key_a", ...limits, tokens: 500 });
      const b = await limiter.admit({ workspaceId: "ws_alone2", keyId: "key_b", ...limits, tokens: 500 });
      if (!a.allowed || !b.allowed) throw new Error("denied");
      await limiter.settle(a.ticket, 0);
      await limiter.settle(b.ticket, 800);
      for (let i = 0; i < 50 && (await client.hGet(`${prefix}rl:{ws_alone}:ws`, "t")) !== "0"; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(await client.hGet(`${prefix}rl:{ws_alone}:ws`, "t")).toBe("0");
      expect(await client.hGet(`${prefix}rl:{ws_alone2}:key:key_b`, "t")).toBe("800");
      const c = await limiter.admit({ workspaceId: "ws_alone", keyId: "key_a", ...limits, tokens: 10 });
      if (!c.allowed) throw new Error("denied");
      await limiter.settle(c.ticket, 4);
      await limiter.close(); // flushes what is still waiting
      expect(await client.hGet(`${prefix}rl:{ws_alone}:key:key_a`, "t")).toBe("4");
    } finally {
      client.destroy();
    }
  });
});

describe("Redis limiter and in-memory limiter", () => {
  /** A small deterministic generator (mulberry32), so a failing sequence can be replayed by its seed. */
  function random(seed: number): () => number {
    let a = seed;
    return () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
    };
  }

  it.each([1, 2, 3])(
    "when the same random admissions, leases, settlements, releases and clock moves reach both (seed %i), then every answer is the same",
    async (seed) => {
      const clock = new FakeClock();
      const window = { windowMs: 10_000, buckets: 10, now: clock.now };
      const redis = await connected(new RedisLimiter({ ...window, url, prefix: `${prefix}diff${seed}:`, timeoutMs: 2_000, logger }));
      const memory = new MemoryLimiter(window);
      const next = random(seed);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
      const workspace = { requests: 12, tokens: 2_000 };
      const keys = { key_a: { requests: 6, tokens: 1_200 }, key_b: { requests: 20, tokens: 5_000 } };
      const open: Ticket[] = [];
      const unused: Unused[] = [];
      let denied = 0;
      let refunds = 0;
      let leases = 0;
      try {
        for (let step = 0; step < 400; step++) {
          const roll = next();
          if (roll < 0.6) {
            const keyId = pick(["key_a", "key_b"] as const);
            const request: AdmitRequest = { workspaceId: `ws_diff${seed}`, keyId, workspace, key: keys[keyId], tokens: Math.floor(next() * 400) };
            if (next() < 0.3) {
              const requests = 2 + Math.floor(next() * 4);
              request.lease = { requests, tokens: requests * request.tokens, share: pick([1, 2]) };
            }
            const fromRedis = await redis.admit(request);
            expect(fromRedis, `step ${step}`).toEqual(await memory.admit(request));
            if (fromRedis.allowed) open.push(fromRedis.ticket);
            else denied++;
            if (fromRedis.allowed && fromRedis.lease) {
              leases++;
              const { requests, tokens } = fromRedis.lease;
              unused.push({ ...fromRedis.ticket, requests: requests - 1, tokens: tokens - request.tokens });
            }
          } else if (roll < 0.7 && unused.length > 0) {
            const part = unused.splice(Math.floor(next() * unused.length), 1)[0] as Unused;
            await Promise.all([redis.release(part), memory.release(part)]);
            if (next() < 0.5) await redis.flush();
          } else if (roll < 0.85 && open.length > 0) {
            const ticket = open.splice(Math.floor(next() * open.length), 1)[0] as Ticket;
            const actual = Math.floor(next() * 500);
            if (actual < ticket.tokens) refunds++;
            await Promise.all([redis.settle(ticket, actual), memory.settle(ticket, actual)]);
            // Half the time it waits for the next admission, which carries it at the same clock.
            if (next() < 0.5) await redis.flush();
          } else {
            await redis.flush();
            clock.advance(pick([300, 1_000, 2_500, 6_000, 11_000]));
          }
        }
      } finally {
        await redis.close();
        await memory.close();
      }
      // The sequence reached the interesting cases: denials and refunds, not only admissions.
      expect(denied).toBeGreaterThan(10);
      expect(refunds).toBeGreaterThan(10);
      expect(leases).toBeGreaterThan(5);
    },
  );
});

describe("Redis limiter taken in leases by two replicas", () => {
  it("when both serve one key past its limits, then together they admit exactly the limits, asking Redis for a fraction of the requests", async () => {
    const clock = new FakeClock();
    const window = { windowMs: 60_000, buckets: 60, now: clock.now };
    const stores = await Promise.all([0, 1].map(() => connected(new RedisLimiter({ ...window, url, prefix: `${prefix}lease:`, timeoutMs: 2_000, logger }))));
    let calls = 0;
    for (const store of stores) {
      const admit = store.admit.bind(store);
      store.admit = (request) => {
        calls++;
        return admit(request);
      };
    }
    const replicas = stores.map((store) => new LeasingLimiter(store, { windowMs: window.windowMs, bucketMs: 1_000, now: clock.now }));
    const request = { workspaceId: "ws_lease", keyId: "key_lease", workspace: { requests: 2_000, tokens: 1e9 }, key: { requests: 1e6, tokens: 60_000 } };
    const admitted = { requests: 0, tokens: 0 };
    let callsToTheLimit = 0;
    try {
      for (let i = 0; i < 3_000; i++) {
        const tokens = 10 + (i % 7) * 5; // 10 to 40: blocks sized for one request fit the next ones only partly
        const answer = await (replicas[(i * 7919) % 3 === 0 ? 1 : 0] as LeasingLimiter).admit({ ...request, tokens });
        if (answer.allowed) {
          admitted.requests++;
          admitted.tokens += tokens;
          if (admitted.requests === 2_000) callsToTheLimit = calls;
        }
        clock.advance(5);
      }
      // Requests ran out first (2,000 at about 25 tokens each is 50,000 tokens of 60,000).
      expect(admitted.requests).toBe(2_000);
      // About 310 here: blocks shrink with the room left, and one sized for a small request runs out of tokens early.
      expect(callsToTheLimit).toBeLessThan(500);
      // What Redis holds is what was admitted: every block's unused part came back.
      for (const replica of replicas) await replica.close();
      const probe = await connected(new RedisLimiter({ ...window, url, prefix: `${prefix}lease:`, timeoutMs: 2_000, logger }));
      const status = await probe.admit({ ...request, workspace: { requests: 1e6, tokens: 1e9 }, key: { requests: 1e6, tokens: 1e9 }, tokens: 0 });
      await probe.close();
      expect(status.status.tokens.remaining).toBe(1e9 - admitted.tokens);
      expect(status.status.requests.remaining).toBe(1e6 - admitted.requests - 1);
    } finally {
      for (const replica of replicas) await replica.close();
    }
  });
});

describe("Redis limiter time limit", () => {
  it("when Redis stops answering on an open connection, then admit rejects once the time limit is up", async () => {
    const target = new URL(url);
    let hang = false;
    const relay = createNetServer((client) => {
      const upstream = connect(Number(target.port || 6379), target.hostname);
      client.on("data", (d: Buffer) => {
        if (!hang) upstream.write(d);
      });
      upstream.on("data", (d: Buffer) => client.write(d));
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
      client.on("close", () => upstream.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
    const relayUrl = `redis://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    const limiter = await connected(new RedisLimiter({ windowMs: 60_000, buckets: 60, url: relayUrl, prefix, timeoutMs: 150, logger }));
    try {
      const request = { workspaceId: "ws_hang", keyId: "key_hang", workspace: { requests: 5, tokens: 50 }, key: { requests: 5, tokens: 50 }, tokens: 0 };
      expect((await limiter.admit(request)).allowed).toBe(true);
      hang = true;
      await expect(limiter.admit(request)).rejects.toThrow(/did not answer within 150 ms/);
    } finally {
      await limiter.close();
      relay.close();
    }
  });
});
