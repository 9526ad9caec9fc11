import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freePort } from "./free-port";

describe("freePort", () => {
  it("hands out distinct ports below the ephemeral range that a server can then listen on", async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(32_768);
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(ports[0], "127.0.0.1", resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
