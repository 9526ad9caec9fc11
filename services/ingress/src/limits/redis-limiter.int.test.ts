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
