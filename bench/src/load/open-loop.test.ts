import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { RequestTarget } from "../http-client";
import { dueThrough, requestsIn, runOpenLoop, sendOffsetNs } from "./open-loop";

describe("the schedule", () => {
  it("when the rate is 1000/s, then request i is due i ms after the start", () => {
    expect([0, 1, 2, 1000].map((i) => sendOffsetNs(i, 1000))).toEqual([0, 1e6, 2e6, 1e9]);
  });

  it("when the rate does not divide a second, then offsets round to the nearest ns and never drift", () => {
    expect(sendOffsetNs(1, 3)).toBe(333_333_333);
    expect(sendOffsetNs(2, 3)).toBe(666_666_667);
    expect(sendOffsetNs(3, 3)).toBe(1e9);
    expect(sendOffsetNs(30_000, 3)).toBe(1e13);
  });

  it("when time has passed, then every request due by then, and only those, is released", () => {
    expect(dueThrough(0, 0, 1000, 100)).toBe(1); // request 0 is due at once
    expect(dueThrough(0, 2_500_000, 1000, 100)).toBe(3); // 0, 1 and 2 ms
    expect(dueThrough(3, 2_999_999, 1000, 100)).toBe(3); // 3 ms not yet
    expect(dueThrough(3, 3_000_000, 1000, 100)).toBe(4);
    expect(dueThrough(3, 1e12, 1000, 100)).toBe(100); // a stalled scheduler catches up to the end, no further
  });

  it("when a window is given in seconds, then it holds rate × seconds requests", () => {
    expect(requestsIn(3, 333.3)).toBe(1000);
    expect(requestsIn(0, 500)).toBe(0);
  });
});

describe("runOpenLoop against a local server", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
    server = undefined;
  });

  /** A server that answers request n (from 1) as `answer(n)` says: a status, or "hang" to never answer. */
  async function serve(answer: (n: number) => number | "hang", delayMs = 0): Promise<RequestTarget> {
    let n = 0;
    server = createServer((req, res) => {
      const what = answer(++n);
      req.resume();
      req.on("end", () => {
        if (what === "hang") return;
        setTimeout(() => res.writeHead(what, { "content-type": "text/plain" }).end(what === 200 ? "ok" : "nope"), delayMs);
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return { origin: `http://127.0.0.1:${port}`, path: "/", headers: { "content-type": "text/plain" }, body: Buffer.from("hi") };
  }

  it("when every tenth answer is a 500, then those count as errors and the rest as answers", async () => {
    const target = await serve((n) => (n % 10 === 0 ? 500 : 200));
    const r = await runOpenLoop(target, { rate: 400, durationSeconds: 0.25 });
    expect(r.sent).toBe(100);
    expect(r.errors).toBe(10);
    expect(r.ok).toBe(90);
    expect(r.latency.count).toBe(90);
    expect(r.errorSamples).toEqual(["status 500: nope"]);
    // 90 answers over at least the 99 intervals of the schedule (a busy machine only lowers it),
    // less up to 2 ms: Node's timers count whole milliseconds and may fire a fraction of one early.
    expect(r.achievedRate).toBeLessThanOrEqual(90 / (99 / 400 - 0.002));
    expect(r.achievedRate).toBeGreaterThan(50);
    expect(r.stoppedEarly).toBe(false);
  });

  it("when warm-up precedes the window, then only the window is counted", async () => {
    const target = await serve(() => 200);
    const r = await runOpenLoop(target, { rate: 200, durationSeconds: 0.1, warmupSeconds: 0.1 });
    expect(r.sent).toBe(20);
    expect(r.ok).toBe(20);
    expect(r.total).toEqual({ sent: 40, ok: 40, errors: 0 });
  });

  it("when the client's event loop stalls, then the sends fall behind, count as late, and the wait counts in the latency", async () => {
    const target = await serve(() => 200);
    setTimeout(() => {
      const until = Date.now() + 150;
      while (Date.now() < until); // the scheduler cannot run: requests due now leave late
    }, 100);
    const r = await runOpenLoop(target, { rate: 200, durationSeconds: 0.4 });
    expect(r.ok).toBe(80);
    // Requests due over the 150 ms stall (about 30) leave together when it ends.
    expect(r.lateSends).toBeGreaterThanOrEqual(20);
    expect(r.sendLag.max).toBeGreaterThanOrEqual(100);
    expect(r.latency.p90).toBeGreaterThanOrEqual(80);
    // Measured from the real send, the wait is missing: the omission a closed loop would make. Each
    // request's latency is its send lag plus its time from the send, so the means differ by the mean
    // lag (about 30 late requests × 75 ms / 80 ≈ 28 ms) however slow a busy machine makes the answers.
    expect(r.latency.mean - r.latencyFromSend.mean).toBeGreaterThanOrEqual(15);
  });

  it("when nothing listens, then every request is an error", async () => {
    const target = await serve(() => 200);
    const closed = target.origin;
    server?.close();
    server = undefined;
    const r = await runOpenLoop({ ...target, origin: closed }, { rate: 100, durationSeconds: 0.1 });
    expect(r.sent).toBe(10);
    expect(r.ok).toBe(0);
    expect(r.errors).toBe(10);
    expect(r.achievedRate).toBe(0);
  });

  it("when answers never come, then they are abandoned at the drain timeout and count as errors", async () => {
    const target = await serve((n) => (n <= 2 ? "hang" : 200));
    const r = await runOpenLoop(target, { rate: 100, durationSeconds: 0.05, drainTimeoutMs: 100 });
    expect(r.sent).toBe(5);
    expect(r.ok).toBe(3);
    expect(r.errors).toBe(2);
    expect(r.errorSamples).toEqual(["no answer within 100 ms after the last send"]);
  });

  it("when the outcome is decided early, then the run gives up without counting what it abandons", async () => {
    const target = await serve(() => 200, 20);
    const started = Date.now();
    const r = await runOpenLoop(target, { rate: 100, durationSeconds: 5, giveUp: { slowerThanMs: 10, slowCount: 3 } });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(r.stoppedEarly).toBe(true);
    expect(r.ok).toBe(3);
    expect(r.errors).toBe(0);
    expect(r.sent).toBeLessThan(20);
  });
});
