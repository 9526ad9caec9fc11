import { startContainer } from "./container";
import { probeTcp } from "./probe";
import { uniqueId } from "./unique-id";

const LOCAL = { host: "127.0.0.1", port: 4222 };

let server: Promise<string> | undefined;

/**
 * A NATS server with JetStream to test against: `NATS_URL`, else a local server on 127.0.0.1:4222
 * whose greeting says JetStream is on, else a throwaway testcontainers `nats:2 -js` (needs Docker).
 */
export function testNatsUrl(): Promise<string> {
  server ??= findServer().catch((err: unknown) => {
    server = undefined;
    throw err;
  });
  return server;
}

/**
 * Lowercase letters and digits only, starting with a letter: valid as a subject token, a stream or
 * consumer name, and a bucket name, so one value can namespace everything a test creates.
 */
export function uniqueNamespace(): string {
  return `t${uniqueId()}`;
}

async function findServer(): Promise<string> {
  // Test infrastructure reads the environment directly: it is how CI points tests at its services.
  const fromEnv = process.env.NATS_URL;
  if (fromEnv) return fromEnv;
  // A NATS server speaks first with INFO {...}; the jobs tests need JetStream, so a local server
  // without it is skipped in favour of a container that has it.
  if (await probeTcp({ ...LOCAL, expect: /^INFO \{.*"jetstream":true/ })) {
    return `nats://${LOCAL.host}:${LOCAL.port}`;
  }
  const tried = `NATS_URL is unset and no JetStream-enabled server answers at ${LOCAL.host}:${LOCAL.port}`;
  return startContainer("NATS", tried, async () => {
    const { GenericContainer, Wait } = await import("testcontainers");
    // Removed by testcontainers' reaper when this process exits.
    const container = await new GenericContainer("nats:2")
      .withCommand(["-js"])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    return `nats://${container.getHost()}:${container.getMappedPort(4222)}`;
  });
}
