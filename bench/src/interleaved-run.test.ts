import { describe, expect, it } from "vitest";
import type { TimedClient } from "./http-client";
import { createLatencyHistogram, type Histogram } from "./histogram";
import { byKey, cpuPerRequest, measureInterleaved, roundedSummary, runBlock, warmUpInterleaved } from "./interleaved-run";

/** A client whose every request "takes" `micros`, logging which path sent it. */
function fake(path: string, micros: number, log: string[]): TimedClient {
  return {
    timed: async () => {
      log.push(path);
      return micros;
    },
    once: async () => ({ status: 200, headers: {}, text: "" }),
    close: async () => {},
  };
}

describe("measureInterleaved", () => {
  it("runs every path's requests in alternating blocks and keeps each path's latencies apart", async () => {
    const log: string[] = [];
    const paths = ["a", "b", "c"] as const;
    const clients = { a: fake("a", 100, log), b: fake("b", 2000, log), c: fake("c", 30_000, log) };
    const run = await measureInterleaved(clients, paths, { requests: 4, block: 2, processes: {} });
    expect(log.join("")).toBe("aabbcc" + "ccbbaa");
    expect(byKey(paths, (p) => run.histograms[p].totalCount)).toEqual({ a: 4, b: 4, c: 4 });
    expect(run.histograms.b.getValueAtPercentile(50)).toBe(2000);
    expect(run.halves.c.firstHalfP50).toBeCloseTo(30, 1);
    expect(Object.keys(run.cpu.a)).toEqual(["bench"]);
    expect(run.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("warms up the same way without recording", async () => {
    const log: string[] = [];
    await warmUpInterleaved({ a: fake("a", 1, log), b: fake("b", 1, log) }, ["a", "b"], 3, 2);
    expect(log.join("")).toBe("aabbba");
  });
});

describe("runBlock", () => {
  /** A client whose requests wait to be let go, counting how many are open at once. */
  function gated() {
    let open = 0;
    let most = 0;
    let sent = 0;
    const waiting: (() => void)[] = [];
    const client: TimedClient = {
      timed: async () => {
        sent++;
        most = Math.max(most, ++open);
        await new Promise<void>((resolve) => waiting.push(resolve));
        open--;
        return 10;
      },
      once: async () => ({ status: 200, headers: {}, text: "" }),
      close: async () => {},
    };
    // Runs a block, letting the open requests go one turn at a time until it is done.
    const run = async (count: number, inFlight: number, ...histograms: Histogram[]) => {
      let finished = false;
      const block = runBlock(client, count, inFlight, ...histograms).then(() => {
        finished = true;
      });
      while (!finished) {
        for (const release of waiting.splice(0)) release();
        await new Promise((resolve) => setImmediate(resolve));
      }
      await block;
    };
    return { run, most: () => most, sent: () => sent };
  }

  it("when eight may be in flight, then eight are open at once and the block sends exactly its count", async () => {
    const g = gated();
    const h = createLatencyHistogram();
    await g.run(20, 8, h);
    expect(g.most()).toBe(8);
    expect(g.sent()).toBe(20);
    expect(h.totalCount).toBe(20);
  });

  it("when one may be in flight, then the next request waits for the last answer", async () => {
    const g = gated();
    await g.run(5, 1);
    expect(g.most()).toBe(1);
    expect(g.sent()).toBe(5);
  });

  it("when a block is shorter than the senders, then it still sends only its count", async () => {
    const g = gated();
    await g.run(3, 8);
    expect(g.sent()).toBe(3);
    expect(g.most()).toBe(3);
  });
});

describe("rounding", () => {
  it("rounds summaries to the µs and CPU to whole µs per request", () => {
    expect(roundedSummary({ count: 3, p50: 0.12345, p90: 1.0004, p99: 2, max: 2.5555, mean: 0.3333 })).toEqual({
      count: 3,
      p50: 0.123,
      p90: 1,
      p99: 2,
      max: 2.556,
      mean: 0.333,
    });
    expect(cpuPerRequest({ bench: 1000, portkey: 2501 }, 10)).toEqual({ bench: 100, portkey: 250 });
  });
});
