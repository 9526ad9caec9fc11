import { connect, createServer as createNetServer, type AddressInfo } from "node:net";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@gw/logger";
import { testRedisUrl, uniquePrefix } from "@gw/testkit";
import { limiterContract } from "./limiter-contract";
import { RedisLimiter } from "./redis-limiter";

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
