import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { defaultFlags } from "../flags";
import { benchModel, type BenchGateway } from "../gateway/start-gateway";
import type { RequestTarget } from "../http-client";
import { oneInFlight } from "../scenarios/one-in-flight";
import type { BenchContext } from "../scenarios/scenario";
import { chatCompletionBody } from "../upstream/payloads";
import type { BaselineMesh } from "./baseline-checkout";

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/**
 * One local server stands in for the upstream and both meshes, telling the paths apart by a
 * header; it answers as a gateway does (the public model name) unless told otherwise.
 */
async function fakeRun(options: { baselineModel?: string; missing?: number } = {}) {
  const answer = (model: string) => Buffer.from(JSON.stringify({ ...JSON.parse(chatCompletionBody().toString("utf8")), model }));
  const order: string[] = [];
  server = createServer((req, res) => {
    req.resume().on("end", () => {
      const who = String(req.headers["x-path"]);
      order.push(who);
      res.writeHead(200, { "content-type": "application/json" }).end(answer(who === "baseline" ? (options.baselineModel ?? benchModel) : benchModel));
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  const target = (path: string): RequestTarget => ({ origin, path: "/v1/chat/completions", headers: { "x-path": path }, body: Buffer.from("{}") });
  const baseline: BaselineMesh = {
    dir: "/tmp/gw-base",
    commit: "abc1234",
    dirty: false,
    gateway: {} as BenchGateway,
    processes: { "baseline:ingress": process.pid },
    chat: target("baseline"),
  };
  // `missing` requests go unanswered from the second reading on: lost during the measured run.
  let calls = 0;
  const ctx: BenchContext = {
    flags: { ...defaultFlags, requests: 12, warmup: 6, block: 3, baseline: "/tmp/gw-base" },
    upstream: {
      url: `${origin}/v1`,
      pid: process.pid,
      stream: { pieces: 1, frameIntervalMs: 1 },
      answered: async () => order.length - (calls++ > 0 ? (options.missing ?? 0) : 0),
      stop: async () => 0,
    },
    gateway: {} as BenchGateway,
    processes: { ingress: process.pid },
    chat: { direct: target("direct"), gateway: target("gateway") },
    progress: () => {},
    earlier: {},
    baseline,
  };
  return { ctx, order };
}

describe("one-in-flight with a baseline", () => {
  it("when --baseline is given, then direct, gateway and baseline are measured in rotating blocks and all three reported", async () => {
    const { ctx, order } = await fakeRun();
    const result = await oneInFlight.run(ctx);

    // Per path: one check, 6 warm-up and 12 measured requests; the measured blocks rotate.
    expect(order.filter((p) => p === "direct")).toHaveLength(19);
    expect(order.filter((p) => p === "baseline")).toHaveLength(19);
    const blocks = order
      .slice(3 + 18)
      .filter((_, i) => i % 3 === 0)
      .map((p) => p[0])
      .join("");
    expect(blocks).toBe("dgb" + "gbd" + "bdg" + "dgb");

    expect(result.name).toBe("one-in-flight");
    expect(result.tables[0]?.rows.map((row) => row[0])).toEqual([
      "direct",
      "gateway",
      "baseline",
      "gateway − direct",
      "baseline − direct",
      "gateway − baseline",
    ]);
    expect(result.tables[1]?.rows.map((row) => row[0])).toEqual([
      "direct",
      "gateway",
      "baseline",
      "gateway − baseline",
      "gateway, whole run",
      "baseline, whole run",
      "gateway − baseline, whole run",
    ]);
    const data = result.data as Record<string, Record<string, unknown>>;
    expect(data.baseline).toEqual({ dir: "/tmp/gw-base", commit: "abc1234", dirty: false });
    expect(Object.keys(data.latencyMs ?? {})).toEqual(["direct", "gateway", "baseline"]);
    expect((data.latencyMs as Record<string, { count: number }>).baseline?.count).toBe(12);
    expect(Object.keys(data.gatewayMinusBaselineMs ?? {})).toEqual(["p50", "p90", "p99"]);
    expect(Object.keys(data.histogramsMicros ?? {})).toEqual(["direct", "gateway", "baseline"]);
    // The baseline's services were read while the baseline's blocks ran.
    expect(Object.keys(data.cpuMicrosPerRequest?.baseline as object)).toEqual(["bench", "ingress", "baseline:ingress"]);
    // And each mesh's over the whole run.
    expect(Object.keys(data.wholeRunServicesCpuMicrosPerRequest ?? {})).toEqual(["gateway", "baseline", "gatewayMinusBaseline"]);
  });

  it("when the baseline answers with the upstream's model name, then the run stops before timing anything", async () => {
    const { ctx, order } = await fakeRun({ baselineModel: "gpt-4o-mini-2024-07-18" });
    await expect(oneInFlight.run(ctx)).rejects.toThrow("baseline: model gpt-4o-mini-2024-07-18, expected gpt-4o-mini");
    expect(order).toEqual(["direct", "gateway", "baseline"]);
  });

  it("when fewer requests reached the upstream than were sent on the three paths, then the run fails", async () => {
    const { ctx } = await fakeRun({ missing: 1 });
    await expect(oneInFlight.run(ctx)).rejects.toThrow("one-in-flight: upstream answered 35 requests, expected 36");
  });
});
