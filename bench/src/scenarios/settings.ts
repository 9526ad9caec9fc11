import { driftWarning } from "../drift";
import { encodeHistogram, summarize } from "../histogram";
import { createTimedClient } from "../http-client";
import { byKey, cpuPerRequest, measureInterleaved, round3, roundedSummary, warmUpInterleaved } from "../interleaved-run";
import { formatMs } from "../report";
import { gatewayChatTarget, verifyChatPaths } from "../targets";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

/** The same request through the same mesh, with a key of a workspace that has none of the settings, and with one that has each. */
const settingsPaths = ["plain", "budget", "capture"] as const;
type SettingsPath = (typeof settingsPaths)[number];

/**
 * What a workspace setting costs each request, against the same mesh without it, in one run: the
 * chat request of one-in-flight, one in flight, with the bench key (`plain`), with a key whose
 * workspace has a hard monthly budget far above what the run spends (`budget`: a hold in Redis
 * beside the rate limit, and its settlement), and with one whose Enterprise workspace keeps
 * detailed logs (`capture`: both bodies kept, redacted and published), in alternating blocks.
 */
export const settings: Scenario = {
  name: "settings",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const { flags, gateway } = ctx;
    const ws = await gateway.admin<{ id: string }>("POST", "/admin/workspaces", {
      name: "bench-budget",
      plan: "enterprise",
      models: ["*"],
      budget: { monthly_usd: 1_000_000, mode: "hard", alert_at_percent: 90 },
    });
    const { key } = await gateway.admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, { name: "bench-budget" });
    const logged = await gateway.admin<{ id: string }>("POST", "/admin/workspaces", {
      name: "bench-capture",
      plan: "enterprise",
      models: ["*"],
      logging: { bodies: true, retention_days: 1 },
    });
    const captureKey = (await gateway.admin<{ key: string }>("POST", `/admin/workspaces/${logged.id}/keys`, { name: "bench-capture" })).key;
    const targets = {
      plain: ctx.chat.gateway,
      budget: gatewayChatTarget({ baseURL: gateway.baseURL, key }),
      capture: gatewayChatTarget({ baseURL: gateway.baseURL, key: captureKey }),
    };
    const clients = byKey(settingsPaths, (path) => createTimedClient(targets[path], 1));
    try {
      await verifyChatPaths(clients, settingsPaths);
      const budgetAnswer = await clients.budget.once();
      if (!budgetAnswer.headers["x-budget-limit-usd"]) throw new Error("budget: the answer carries no x-budget-limit-usd: no budget was applied");
      ctx.progress(`settings: warm-up, ${flags.warmup} requests per path`);
      await warmUpInterleaved(clients, settingsPaths, flags.warmup, flags.block);
      ctx.progress(`settings: ${flags.requests} requests per path in blocks of ${flags.block}`);
      const run = await measureInterleaved(clients, settingsPaths, { requests: flags.requests, block: flags.block, processes: ctx.processes });
      const latency = byKey(settingsPaths, (path) => roundedSummary(summarize(run.histograms[path])));
      const cpu = byKey(settingsPaths, (path) => cpuPerRequest(run.cpu[path], flags.requests));
      const services = (path: SettingsPath) =>
        Object.entries(cpu[path]).reduce((sum, [name, us]) => (name === "bench" || name === "upstream" ? sum : sum + us), 0);
      const names = Object.keys(cpu.plain);
      const row = (path: SettingsPath) => [
        path,
        formatMs(latency[path].p50),
        formatMs(latency[path].p99),
        ...names.map((n) => cpu[path][n] ?? 0),
        services(path),
      ];
      const added = latency.budget.p50 - latency.plain.p50;
      const minus = (path: SettingsPath) => [
        `${path} − plain`,
        formatMs(latency[path].p50 - latency.plain.p50, true),
        formatMs(latency[path].p99 - latency.plain.p99, true),
        ...names.map((n) => (cpu[path][n] ?? 0) - (cpu.plain[n] ?? 0)),
        services(path) - services("plain"),
      ];
      return {
        name: "settings",
        tables: [
          {
            title: `workspace settings: ${flags.requests} requests per path, one in flight, blocks of ${flags.block} (ms; CPU µs per request)`,
            columns: ["path", "p50", "p99", ...names, "services"],
            rows: [row("plain"), row("budget"), row("capture"), minus("budget"), minus("capture")],
          },
        ],
        notes: settingsPaths.flatMap((path) => driftWarning(path, run.halves[path]) ?? []),
        data: {
          requestsPerPath: flags.requests,
          warmupPerPath: flags.warmup,
          blockSize: flags.block,
          latencyMs: latency,
          budgetMinusPlainP50Ms: round3(added),
          captureMinusPlainP50Ms: round3(latency.capture.p50 - latency.plain.p50),
          cpuMicrosPerRequest: cpu,
          halvesP50Ms: run.halves,
          histogramsMicros: byKey(settingsPaths, (path) => encodeHistogram(run.histograms[path])),
        } satisfies Json,
      };
    } finally {
      await Promise.all(settingsPaths.map((path) => clients[path].close()));
    }
  },
};
