import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  baselineProcesses,
  buildBaselineCheckout,
  describeBaseline,
  readBaselineCheckout,
  type BaselineCheckout,
  type BaselineMesh,
} from "./baseline/baseline-checkout";
import { Cleanup } from "./cleanup";
import { parseFlags, usage, type BenchFlags } from "./flags";
import { buildServices } from "../../scripts/build";
import { startGateway, type BenchGateway } from "./gateway/start-gateway";
import { currentLoadAverage, describeMachine } from "./machine";
import { cpuUsers, neighbourNote, readProcessTable, type NeighbourReport } from "./neighbours";
import { renderHeader, renderTable } from "./report";
import { portkeyComparison } from "./portkey/one-in-flight-portkey";
import { asyncJobs } from "./scenarios/async-jobs";
import { breakdown } from "./scenarios/breakdown";
import { capacity } from "./scenarios/capacity";
import { limiter } from "./scenarios/limiter";
import { eightInFlight, oneInFlight } from "./scenarios/one-in-flight";
import { settings } from "./scenarios/settings";
import { spaced } from "./scenarios/spaced";
import { stackFloor } from "./scenarios/stack-floor";
import { openLoop } from "./scenarios/open-loop-load";
import { streaming } from "./scenarios/streaming";
import type { BenchContext, Scenario, ScenarioResult } from "./scenarios/scenario";
import { chatTargets, gatewayChatTarget } from "./targets";
import { spawnUpstream } from "./upstream/spawn-upstream";

/** Run in this order; later scenarios (open-loop load, capacity, streaming, …) are appended here. */
const scenarios: readonly Scenario[] = [oneInFlight, spaced, settings, stackFloor, capacity, openLoop, streaming, limiter, asyncJobs];
/**
 * Run only when named in --scenarios: breakdown changes how the services are started, and
 * eight-in-flight is one-in-flight again under load.
 */
const optIn: readonly Scenario[] = [breakdown, eightInFlight];
/** The scenarios that measure the --baseline mesh too; the others ignore it. */
const measuringBaseline: readonly Scenario[] = [oneInFlight, spaced, eightInFlight];

const progress = (message: string) => process.stderr.write(`[bench] ${message}\n`);

/**
 * BENCH_SERVICE_NODE_OPTIONS becomes the services' NODE_OPTIONS, e.g. "--import
 * bench/src/profile/hook.mjs" (with BENCH_PROFILE_DIR: each service's CPU profile) to see where
 * their time goes; Node refuses --cpu-prof there. The bench's own process is unaffected.
 */
function serviceEnv(breakdownPrefix: string | undefined): Record<string, string> {
  const options = [process.env.BENCH_SERVICE_NODE_OPTIONS ?? ""];
  if (breakdownPrefix) options.push(`--import ${fileURLToPath(new URL("./breakdown/hook.mjs", import.meta.url))}`);
  const env: Record<string, string> = {};
  if (breakdownPrefix) env.BENCH_BREAKDOWN_PREFIX = breakdownPrefix;
  // The services get only the environment the mesh gives them: the profile hook's settings go on.
  for (const name of ["BENCH_PROFILE_DIR", "BENCH_PROFILE_INTERVAL_US"]) {
    const value = process.env[name];
    if (value) env[name] = value;
  }
  const joined = options.join(" ").trim();
  if (joined) env.NODE_OPTIONS = joined;
  return env;
}

async function main(argv: readonly string[]): Promise<number> {
  let flags: BenchFlags;
  try {
    flags = parseFlags(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${usage}\n`);
    return 2;
  }
  if (flags.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const known = [...scenarios, ...optIn];
  const unknown = flags.scenarios.filter((name) => !known.some((s) => s.name === name));
  if (unknown.length > 0) {
    process.stderr.write(`--scenarios: unknown ${unknown.join(", ")}; known: ${known.map((s) => s.name).join(", ")}\n`);
    return 2;
  }
  const chosen = flags.scenarios.length > 0 ? known.filter((s) => flags.scenarios.includes(s.name)) : scenarios;
  let checkout: BaselineCheckout | undefined;
  if (flags.baseline !== undefined) {
    if (!chosen.some((s) => measuringBaseline.includes(s))) {
      process.stderr.write(`--baseline: only ${measuringBaseline.map((s) => s.name).join(" and ")} measure the baseline; add one to --scenarios\n`);
      return 2;
    }
    try {
      checkout = readBaselineCheckout(flags.baseline);
    } catch (err) {
      process.stderr.write(`${(err as Error).message}\n`);
      return 2;
    }
  }

  const cleanup = new Cleanup();
  const breakdownDir = chosen.includes(breakdown) ? mkdtempSync(join(tmpdir(), "gw-bench-")) : undefined;
  if (breakdownDir) cleanup.add("breakdown files", async () => rmSync(breakdownDir, { recursive: true, force: true }));
  const breakdownPrefix = breakdownDir && join(breakdownDir, "breakdown-");
  const interrupt = (signal: NodeJS.Signals) => {
    progress(`${signal}: stopping`);
    void cleanup.run().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupt);
  process.once("SIGTERM", interrupt);

  const machine = describeMachine();
  const startedAt = new Date().toISOString();
  try {
    if (flags.built) {
      // Built now, from this tree as it is, so the bundles can never be older than the sources.
      progress("building the services (pnpm build)");
      await buildServices();
    }
    if (checkout && flags.baselineBuilt) {
      progress(`building the baseline's services (pnpm build in ${checkout.dir})`);
      await buildBaselineCheckout(checkout);
    }
    const upstreamKey = `sk-bench-${randomBytes(12).toString("hex")}`;
    // Each teardown is registered before its start finishes: an interrupt during start-up then
    // waits for the start and stops what it started, instead of leaving processes behind.
    const upstreamStart = spawnUpstream({ apiKey: upstreamKey });
    cleanup.add("upstream", async () => {
      const started = await upstreamStart.catch(() => undefined);
      const code = await started?.stop();
      if (started && code !== 0) throw new Error(`upstream exited with ${code}`);
    });
    const upstream = await upstreamStart;

    if (cleanup.stopping) throw new Error("interrupted");
    const startThisMesh = async (): Promise<BenchGateway> => {
      progress("starting the mesh (one process per service, Postgres, Redis, NATS)");
      const gatewayStart = startGateway({ upstreamURL: upstream.url, upstreamKey, serviceEnv: serviceEnv(breakdownPrefix), built: flags.built });
      cleanup.add("mesh", () => stopMesh(gatewayStart, "services"));
      const started = await gatewayStart;
      if (cleanup.stopping) throw new Error("interrupted");
      return started;
    };

    let baseline: BaselineMesh | undefined;
    let stopBaseline: Promise<void> | undefined;
    let stopBaselineNow: (() => Promise<void>) | undefined;
    const startBaselineMesh = async (from: BaselineCheckout): Promise<BaselineMesh> => {
      // The same upstream and configuration, its own database, NATS namespace, Redis prefix and
      // ports; only the environment the mesh needs (an older checkout may not know newer variables).
      progress(`starting the baseline mesh: ${describeBaseline(from)}`);
      const baselineStart = startGateway({
        upstreamURL: upstream.url,
        upstreamKey,
        serviceEnv: serviceEnv(undefined),
        root: from.dir,
        built: flags.baselineBuilt,
      });
      cleanup.add("baseline mesh", () => (stopBaseline ??= stopMesh(baselineStart, "baseline services")));
      stopBaselineNow = () => (stopBaseline ??= stopMesh(baselineStart, "baseline services"));
      const started = await baselineStart;
      if (cleanup.stopping) throw new Error("interrupted");
      return { ...from, gateway: started, processes: baselineProcesses(started.pids), chat: gatewayChatTarget(started) };
    };
    // One after the other, never together: a mesh's start is CPU-bound, and each waits for its own.
    if (checkout && flags.baselineFirst) baseline = await startBaselineMesh(checkout);
    const gateway = await startThisMesh();
    if (checkout && !flags.baselineFirst) baseline = await startBaselineMesh(checkout);

    const ctx: BenchContext = {
      flags,
      upstream,
      gateway,
      processes: { upstream: upstream.pid, ...gateway.pids },
      chat: chatTargets(upstream, gateway, upstreamKey),
      progress,
      breakdownPrefix,
      earlier: {},
      ...(baseline ? { baseline } : {}),
    };
    const results: ScenarioResult[] = [];
    const others: Record<string, NeighbourReport> = {};
    const run = flags.comparePortkey ? [...chosen, portkeyComparison({ upstreamKey, cleanup })] : chosen;
    for (const scenario of run) {
      const before = readProcessTable();
      const started = performance.now();
      const result = await scenario.run(ctx);
      const users = cpuUsers(before, readProcessTable(), performance.now() - started, process.pid);
      others[result.name] = users;
      const note = neighbourNote(result.name, users);
      if (note) result.notes.push(note);
      results.push(result);
      ctx.earlier[result.name] = result.data;
      // Once nothing left measures it, the baseline mesh goes: its idle services take enough of the
      // machine to skew the scenarios that drive this tree's mesh hard (capacity, open loop).
      if (stopBaselineNow && !run.slice(run.indexOf(scenario) + 1).some((s) => measuringBaseline.includes(s))) {
        progress("stopping the baseline mesh: no scenario left measures it");
        await stopBaselineNow();
        stopBaselineNow = undefined;
      }
    }

    const out = resolve(flags.out);
    mkdirSync(dirname(out), { recursive: true });
    const report = {
      schema: 1,
      startedAt,
      finishedAt: new Date().toISOString(),
      loadAverageAtEnd: currentLoadAverage(),
      machine,
      flags: {
        requests: flags.requests,
        warmup: flags.warmup,
        block: flags.block,
        comparePortkey: flags.comparePortkey,
        ...(flags.built ? { built: true } : {}),
        scenarios: chosen.map((s) => s.name),
        ...(checkout ? { baseline: checkout.dir, baselineFirst: flags.baselineFirst, ...(flags.baselineBuilt ? { baselineBuilt: true } : {}) } : {}),
      },
      setup: {
        mesh: "one process per service",
        services: servicesRun(flags.built),
        database: "postgres",
        bus: "nats",
        redis: true,
        logLevel: "warn",
        upstream: "fixed answer, zero delay, own process",
      },
      ...(checkout ? { baseline: checkout } : {}),
      scenarios: Object.fromEntries(results.map((r) => [r.name, r.data])),
      // CPU used by processes the benchmark did not start, per scenario, as a share of one core.
      otherProcesses: others,
    };
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);

    const sections = results.map((r) => [...r.tables.map(renderTable), ...(r.notes.length ? [r.notes.join("\n")] : [])].join("\n\n"));
    const header = [
      renderHeader(machine),
      `services ${servicesRun(flags.built)}`,
      ...(checkout ? [`${describeBaseline(checkout)}, ${servicesRun(flags.baselineBuilt)}`] : []),
    ].join("\n");
    process.stdout.write(`\n${header}\n\n${sections.join("\n\n")}\n\nresults: ${out}\n`);
    return 0;
  } catch (err) {
    // After an interrupt, requests fail because the processes are going away: not worth a stack.
    if (!cleanup.stopping) process.stderr.write(`benchmark failed: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  } finally {
    progress("stopping");
    await cleanup.run();
  }
}

/** How a mesh's services run: their bundles (--built, --baseline-built) or their sources through tsx. */
function servicesRun(built: boolean): string {
  return built ? "bundled (pnpm build; node --enable-source-maps dist/main.js)" : "TypeScript sources through tsx";
}

/** Stops a mesh once its start has settled (a failed start has already stopped its processes and dropped its database). */
async function stopMesh(start: Promise<BenchGateway>, label: string): Promise<void> {
  const started = await start.catch(() => undefined);
  if (!started) return;
  const codes = await started.stop();
  if (Object.values(codes).some((code) => code !== 0)) {
    process.stderr.write(`${label} did not exit cleanly: ${JSON.stringify(codes)}\n${started.output()}\n`);
    process.exitCode = 1;
  }
}

const code = await main(process.argv.slice(2));
process.exitCode = Math.max(code, typeof process.exitCode === "number" ? process.exitCode : 0);
