import { encodeHistogram, percentileDifference, type LatencySummary } from "../histogram";
import { openLoopDefaults, runOpenLoop, type OpenLoopResult } from "../load/open-loop";
import { accumulateCpu, readCpu, type CpuReading } from "../process-cpu";
import { readRss, sampleRss, type RssReading } from "../process-memory";
import { formatMs, type Table } from "../report";
import { chatPaths, type ChatPath } from "../targets";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

const FRACTIONS = [0.25, 0.5, 0.75] as const;
/** The step at which CPU and memory are read: busy, but below the knee where queues grow. */
const MEASURED_FRACTION = 0.75;
const DURATION_SECONDS = 10;
const WARMUP_SECONDS = 2;
const PAUSE_MS = 500;

interface Run {
  fraction: number;
  rps: number;
  path: ChatPath;
  result: OpenLoopResult;
}

/**
 * Scenario: open-loop load. At 25, 50 and 75 % of the gateway's capacity (from the capacity
 * scenario), the same rate goes straight to the upstream and through the gateway, on schedule
 * whatever the answers do; latency runs from each request's scheduled send, so queueing counts.
 * At 75 %, CPU per request and resident memory of every process are read as well.
 */
export const openLoop: Scenario = {
  name: "open-loop",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const capacity = gatewayCapacity(ctx.earlier);
    const capacityRps = capacity ?? FALLBACK_BASE_RPS;
    // Read before this scenario's load. Earlier scenarios have loaded the services already, and V8
    // gives memory back slowly, so "idle" is the resting size after that work, not the size at start.
    const idleRss = readRss(ctx.processes);
    const cpu: Record<ChatPath, CpuReading> = { direct: {}, gateway: {} };
    const cpuRequests: Record<ChatPath, number> = { direct: 0, gateway: 0 };
    let loadRss: RssReading = {};
    const runs: Run[] = [];
    const answeredBefore = await ctx.upstream.answered();

    for (const fraction of FRACTIONS) {
      const rps = Math.max(1, Math.round(capacityRps * fraction));
      for (const path of chatPaths) {
        ctx.progress(`open-loop: ${path} at ${rps} rps (${fraction * 100} % of capacity), ${DURATION_SECONDS} s after ${WARMUP_SECONDS} s warm-up`);
        const measured = fraction === MEASURED_FRACTION;
        const cpuBefore = measured ? readCpu(ctx.processes) : undefined;
        const rss = measured && path === "gateway" ? sampleRss(ctx.processes) : undefined;
        const result = await runOpenLoop(ctx.chat[path], { rate: rps, durationSeconds: DURATION_SECONDS, warmupSeconds: WARMUP_SECONDS });
        if (rss) loadRss = rss.stop();
        if (cpuBefore) {
          accumulateCpu(cpu[path], cpuBefore, readCpu(ctx.processes));
          cpuRequests[path] += result.total.sent; // the CPU window held the warm-up too
        }
        runs.push({ fraction, rps, path, result });
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
      }
    }

    // With no errors, every request of both paths must have reached the upstream: no cache or shortcut.
    const reached = (await ctx.upstream.answered()) - answeredBefore;
    const sent = runs.reduce((sum, r) => sum + r.result.total.sent, 0);
    const anyErrors = runs.some((r) => r.result.total.errors > 0);
    if (!anyErrors && reached !== sent) throw new Error(`upstream answered ${reached} requests, expected ${sent}`);

    const steps = FRACTIONS.map((fraction) => {
      const at = (path: ChatPath) => runs.find((r) => r.fraction === fraction && r.path === path) as Run;
      const direct = at("direct");
      const gateway = at("gateway");
      return { fraction, rps: direct.rps, direct: direct.result, gateway: gateway.result };
    });
    const cpuPerRequest = {
      direct: perRequest(cpu.direct, cpuRequests.direct),
      gateway: perRequest(cpu.gateway, cpuRequests.gateway),
    };
    return {
      name: "open-loop",
      tables: [latencyTable(steps), cpuTable(cpuPerRequest), rssTable(idleRss, loadRss)],
      notes: [
        ...(capacity === undefined
          ? [`capacity found no gateway rate with p99 under 10 ms on this machine; the rates are fractions of ${FALLBACK_BASE_RPS} requests/s instead`]
          : []),
        ...runs.flatMap(warnings),
      ],
      data: {
        capacityRps,
        durationSeconds: DURATION_SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        steps: steps.map((s) => ({
          fraction: s.fraction,
          rps: s.rps,
          direct: runData(s.direct),
          gateway: runData(s.gateway),
          gatewayMinusDirectMs: difference(s.gateway.latency, s.direct.latency),
        })),
        // Over the whole 75 % runs, warm-up included; bench = the client. The services idle during
        // the direct run, so its columns for them show background work only.
        cpuMicrosPerRequest: { fraction: MEASURED_FRACTION, ...cpuPerRequest },
        // Peak VmRSS while the gateway ran at 75 %, sampled every 500 ms, against one reading at idle.
        rssMB: { idle: toMB(idleRss), underLoad: toMB(loadRss) },
      } satisfies Json,
    };
  },
};

/**
 * When capacity found no passing gateway rate (a noisy machine whose p99 is over 10 ms even at a
 * trickle), the load still runs, at fractions of this rate, and the result says so.
 */
const FALLBACK_BASE_RPS = 40;

/** The capacity scenario's gateway rate; undefined when it found none that passed. */
function gatewayCapacity(earlier: Record<string, Json>): number | undefined {
  const field = (value: Json | undefined, key: string): Json | undefined =>
    value !== null && typeof value === "object" && !Array.isArray(value) ? value[key] : undefined;
  if (earlier.capacity === undefined) throw new Error("open-loop needs the capacity scenario to run first (--scenarios capacity,open-loop)");
  const rps = field(field(earlier.capacity, "gateway"), "rps");
  return typeof rps === "number" && rps > 0 ? rps : undefined;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

function roundedSummary(s: LatencySummary) {
  return { count: s.count, p50: round3(s.p50), p90: round3(s.p90), p99: round3(s.p99), max: round3(s.max), mean: round3(s.mean) };
}

function difference(gateway: LatencySummary, direct: LatencySummary) {
  const d = percentileDifference(gateway, direct);
  return { p50: round3(d.p50), p90: round3(d.p90), p99: round3(d.p99) };
}

function runData(r: OpenLoopResult) {
  return {
    sent: r.sent,
    ok: r.ok,
    errors: r.errors,
    errorSamples: r.errorSamples,
    achievedRps: Math.round(r.achievedRate),
    latencyMs: roundedSummary(r.latency),
    // The same answers timed from the moment each was handed to the pool: the generator's lag removed.
    latencyFromSendMs: { p50: round3(r.latencyFromSend.p50), p99: round3(r.latencyFromSend.p99) },
    lateSends: r.lateSends,
    sendLagMs: { p50: round3(r.sendLag.p50), p99: round3(r.sendLag.p99), max: round3(r.sendLag.max) },
    histogramMicros: encodeHistogram(r.histogram),
  };
}

function perRequest(total: CpuReading, requests: number): Record<string, number> {
  return Object.fromEntries(Object.entries(total).map(([name, micros]) => [name, requests > 0 ? Math.round(micros / requests) : 0]));
}

function toMB(reading: RssReading): Record<string, number> {
  return Object.fromEntries(Object.entries(reading).map(([name, kb]) => [name, Math.round((kb / 1024) * 10) / 10]));
}

function warnings({ rps, path, result: r }: Run): string[] {
  const out: string[] = [];
  if (r.errors > 0) out.push(`warning: ${path} at ${rps} rps: ${r.errors} errors, e.g. ${r.errorSamples[0] ?? "?"}`);
  if (r.lateSends > r.sent / 100) {
    out.push(
      `warning: ${path} at ${rps} rps: ${r.lateSends} of ${r.sent} sends left over ${openLoopDefaults.lateAfterMs} ms late (the load generator fell behind; the wait is in the latency)`,
    );
  }
  return out;
}

function latencyTable(steps: { fraction: number; rps: number; direct: OpenLoopResult; gateway: OpenLoopResult }[]): Table {
  const row = (rate: string, path: string, r: OpenLoopResult) => [
    rate,
    path,
    formatMs(r.latency.p50),
    formatMs(r.latency.p90),
    formatMs(r.latency.p99),
    formatMs(r.latency.max),
    formatMs(r.latencyFromSend.p50),
    Math.round(r.achievedRate),
    r.errors,
    r.lateSends,
  ];
  return {
    // "p50 from send" leaves out the generator's own lag (timers fire up to ~1 ms late): on a fast
    // path that lag is most of the scheduled-send p50, and it is roughly equal on both paths.
    title: `open-loop load: ${DURATION_SECONDS} s per rate and path after ${WARMUP_SECONDS} s warm-up; latency from each request's scheduled send (ms)`,
    columns: ["rate", "path", "p50", "p90", "p99", "max", "p50 from send", "achieved rps", "errors", "late sends"],
    rows: steps.flatMap((s) => {
      const d = percentileDifference(s.gateway.latency, s.direct.latency);
      const rate = `${s.rps} rps (${s.fraction * 100} %)`;
      return [
        row(rate, "direct", s.direct),
        row("", "gateway", s.gateway),
        ["", "gateway − direct", formatMs(d.p50, true), formatMs(d.p90, true), formatMs(d.p99, true), "", "", "", "", ""],
      ];
    }),
  };
}

function cpuTable(perPath: Record<ChatPath, Record<string, number>>): Table {
  const names = Object.keys(perPath.gateway);
  const services = names.filter((n) => n !== "bench" && n !== "upstream");
  const row = (path: ChatPath) => {
    const values = perPath[path];
    return [path, ...names.map((n) => values[n] ?? 0), services.reduce((sum, n) => sum + (values[n] ?? 0), 0)];
  };
  return {
    title: `CPU per request at ${MEASURED_FRACTION * 100} % of capacity (µs; bench = the client; other processes read from /proc in 10 ms ticks)`,
    columns: ["path", ...names, "services"],
    rows: [row("direct"), row("gateway")],
  };
}

function rssTable(idle: RssReading, load: RssReading): Table {
  const mb = (kb: number | undefined) => (kb === undefined ? "" : (kb / 1024).toFixed(1));
  const names = [...new Set([...Object.keys(idle), ...Object.keys(load)])];
  return {
    title: `resident memory (VmRSS, MB): idle at this scenario's start (after the capacity search), and the peak while the gateway ran at ${MEASURED_FRACTION * 100} % of capacity`,
    columns: ["process", "idle", "under load", "change"],
    rows: names.map((n) => {
      const before = idle[n];
      const after = load[n];
      const change = before === undefined || after === undefined ? "" : `${after >= before ? "+" : ""}${((after - before) / 1024).toFixed(1)}`;
      return [n, mb(before), mb(after), change];
    }),
  };
}
