import { startContainer } from "./container";
import { probeTcp } from "./probe";
import { uniqueId } from "./unique-id";

const LOCAL = { host: "127.0.0.1", port: 6379 };

let server: Promise<string> | undefined;

/**
 * A Redis to test against: `REDIS_URL`, else a local Redis on 127.0.0.1:6379 that answers PING, else
 * a throwaway testcontainers Redis (needs Docker). Tests share it and keep apart with `uniquePrefix`.
 */
export function testRedisUrl(): Promise<string> {
  server ??= findServer().catch((err: unknown) => {
    server = undefined;
    throw err;
  });
  return server;
}

/** A key prefix such as `gwt:limits:m3k2x9ab12cd:`, unique per call; the `gwt:` head makes leftovers easy to find. */
export function uniquePrefix(label: string): string {
  const safe = label.toLowerCase().replace(/[^a-z0-9_-]+/g, "-");
  return `gwt:${safe}:${uniqueId()}:`;
}

async function findServer(): Promise<string> {
  // Test infrastructure reads the environment directly: it is how CI points tests at its services.
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) return fromEnv;
  // Inline PING; a server that wants a password answers -NOAUTH and is treated as absent.
  if (await probeTcp({ ...LOCAL, send: "PING\r\n", expect: /^\+PONG\r\n/ })) {
    return `redis://${LOCAL.host}:${LOCAL.port}`;
  }
  const tried = `REDIS_URL is unset and nothing answers PING at ${LOCAL.host}:${LOCAL.port}`;
  return startContainer("Redis", tried, async () => {
    const { RedisContainer } = await import("@testcontainers/redis");
    // Removed by testcontainers' reaper when this process exits.
    const container = await new RedisContainer("redis:7-alpine").start();
    return container.getConnectionUrl();
  });
}
