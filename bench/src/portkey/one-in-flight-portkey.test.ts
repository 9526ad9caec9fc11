import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { defaultFlags } from "../flags";
import { benchModel } from "../gateway/start-gateway";
import type { RequestTarget } from "../http-client";
import type { ScenarioResult } from "../scenarios/scenario";
import { chatCompletionBody } from "../upstream/payloads";
import { addedRatio, measurePortkeyOneInFlight } from "./one-in-flight-portkey";

describe("addedRatio", () => {
  it("divides Portkey's added latency by the gateway's, and gives null where the gateway added nothing", () => {
    expect(addedRatio({ p50: 3, p90: 1, p99: 2 }, { p50: 0.7, p90: 0, p99: -0.1 })).toEqual({ p50: 4.29, p90: null, p99: null });
  });
});

describe("measurePortkeyOneInFlight", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it("measures the three paths alike and reports each one's latency and what each gateway adds", async () => {
    // One server stands in for all three paths: it answers as the gateway does (public model name).
    const answer = Buffer.from(JSON.stringify({ ...JSON.parse(chatCompletionBody().toString("utf8")), model: benchModel }));
    const seen: Record<string, number> = {};
    server = createServer((req, res) => {
      req.resume().on("end", () => {
        const who = String(req.headers["x-path"]);
        seen[who] = (seen[who] ?? 0) + 1;
        res.writeHead(200, { "content-type": "application/json" }).end(answer);
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const target = (path: string): RequestTarget => ({ origin, path: "/v1/chat/completions", headers: { "x-path": path }, body: Buffer.from("{}") });
    const total = () => Object.values(seen).reduce((a, b) => a + b, 0);

    const result: ScenarioResult = await measurePortkeyOneInFlight({
      flags: { ...defaultFlags, requests: 20, warmup: 10, block: 5, out: "", comparePortkey: true },
      upstream: { url: `${origin}/v1`, pid: process.pid, answered: async () => total() } as never,
      processes: {},
      chat: { direct: target("direct"), gateway: target("gateway") },
      progress: () => {},
      portkey: { baseURL: `${origin}/v1`, headers: { "x-path": "portkey" }, pid: process.pid, version: "1.15.2", command: ["node", "start-server.js"] },
    });

    // Per path: one check before timing, the warm-up and the measured requests.
    expect(seen).toEqual({ direct: 31, gateway: 31, portkey: 31 });
    expect(result.name).toBe("portkey-one-in-flight");
    const data = result.data as Record<string, Record<string, Record<string, number>>>;
    expect(Object.keys(data.latencyMs ?? {})).toEqual(["direct", "gateway", "portkey"]);
    expect(data.latencyMs?.portkey?.count).toBe(20);
    expect(Object.keys(data.portkeyMinusDirectMs ?? {})).toEqual(["p50", "p90", "p99"]);
    expect(Object.keys(data.cpuMicrosPerRequest?.portkey ?? {})).toEqual(["bench", "portkey"]);
    const labels = result.tables[0]?.rows.map((row) => row[0]);
    expect(labels).toEqual(["direct", "gateway", "portkey", "gateway − direct", "portkey − direct", "portkey added ÷ gateway added"]);
  });
});
