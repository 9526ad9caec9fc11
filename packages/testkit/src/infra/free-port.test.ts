import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freePort, portSlice } from "./free-port";

describe("freePort", () => {
  it("hands out distinct ports below the ephemeral range, from this worker's slice, that a server can then listen on", async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(20);
    const slice = portSlice(Number(process.env.VITEST_POOL_ID));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(slice.first);
      expect(port).toBeLessThanOrEqual(slice.last);
      expect(port).toBeLessThan(32_768);
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(ports[0], "127.0.0.1", resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });

  it("gives every worker a slice of its own, so that two workers never check the same port free at once", () => {
    const slices = Array.from({ length: 12 }, (_, i) => portSlice(i + 1));
    for (const [i, a] of slices.entries()) {
      expect(a.first).toBeGreaterThanOrEqual(20_000);
      expect(a.last).toBeLessThan(32_768);
      for (const b of slices.slice(i + 1)) expect(a.last < b.first || b.last < a.first).toBe(true);
    }
  });

  it("skips a port that something already listens on", async () => {
    const first = await freePort();
    // Hold the port that comes next in order (if something else holds it already, all the better).
    const slice = portSlice(Number(process.env.VITEST_POOL_ID));
    const next = first === slice.last ? slice.first : first + 1;
    const blocker = createServer();
    await new Promise<void>((resolve) => {
      blocker.once("error", () => resolve());
      blocker.listen(next, "127.0.0.1", resolve);
    });
    try {
      const port = await freePort();
      expect(port).not.toBe(next);
      expect(port).not.toBe(first);
    } finally {
      if (blocker.listening) await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
