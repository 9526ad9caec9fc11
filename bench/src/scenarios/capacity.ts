import { createTimedClient, type RequestTarget } from "../http-client";
import { openLoopDefaults, requestsIn, runOpenLoop } from "../load/open-loop";
import { withDefaults } from "../load/with-defaults";
import { formatMs, type Table } from "../report";
import { chatPaths, verifyChatPaths, type ChatPath } from "../targets";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

/** "repeat": a further try of the same rate, for its majority verdict. */
export type SearchPhase = "grow" | "narrow" | "repeat";

export interface SearchOptions {
  /** The first rate tried, requests/s. */
  startRps: number;
  /** Each growing step multiplies the rate by this (and each shrinking step divides by it). */
  growthFactor: number;
  /** The search never tries more: a path that passes here is reported as at least this fast. */
  maxRps: number;
  /** When even this rate fails, the search stops with no passing rate. */
  minRps: number;
  /** Halvings of the interval between the last pass and the first fail. */
  narrowSteps: number;
  /**
   * Tries per rate (odd; default 1): its verdict is the majority's, and it stops trying as soon as
   * one side has a majority. On this machine a 5 s step's p99 near the knee moves by several ms
   * from one try to the next (pauses of the VM, a collection in one service, how the kernel places
   * the processes), so a single try lets one pause set the capacity, and a rule that only retries
   * failures lets one lucky try set it; the majority of three does neither.
   */
  trials?: number;
}

export interface SearchOutcome<S> {
  /** The highest passing step, if any passed. */
  best?: S;
  /** The lowest failing step above `best`, if any failed. */
  firstFail?: S;
  /** Every step, in the order tried. */
  steps: S[];
  /** `maxRps` passed: the real limit lies higher. */
  capped: boolean;
}

/**
 * The search alone, over any way of trying a rate: geometric steps until the outcome flips (up
 * from a pass, down from a fail), then halving the interval between the last pass and the first
 * fail. Rates are whole requests per second.
 */
export async function searchCapacity<S extends { rps: number; pass: boolean }>(
  tryRate: (rps: number, phase: SearchPhase) => Promise<S>,
  options: SearchOptions,
): Promise<SearchOutcome<S>> {
  const steps: S[] = [];
  const trials = options.trials ?? 1;
  if (!Number.isInteger(trials) || trials < 1 || trials % 2 === 0) throw new Error(`capacity search: trials must be a positive odd number (${trials})`);
  const majority = (trials + 1) / 2;
  // The verdict is the majority's; the try returned is the last, which always agrees with it.
  const attempt = async (rps: number, phase: SearchPhase) => {
    let passes = 0;
    let step: S | undefined;
    for (let i = 0; passes < majority && i - passes < majority; i++) {
      step = await tryRate(rps, i === 0 ? phase : "repeat");
      steps.push(step);
      if (step.pass) passes++;
    }
    return step!;
  };
  let best: S | undefined;
  let firstFail: S | undefined;
  let rps = Math.min(options.maxRps, Math.max(options.minRps, Math.round(options.startRps)));
  for (;;) {
    const step = await attempt(rps, "grow");
    if (step.pass) {
      best = step;
      if (firstFail || rps >= options.maxRps) break;
      rps = Math.min(options.maxRps, Math.round(rps * options.growthFactor));
    } else {
      firstFail = step;
      if (best) break;
      const lower = Math.round(rps / options.growthFactor);
      if (lower < options.minRps) break;
      rps = lower;
    }
  }
  for (let i = 0; i < options.narrowSteps && best && firstFail; i++) {
    const mid = Math.round((best.rps + firstFail.rps) / 2);
    if (mid <= best.rps || mid >= firstFail.rps) break;
    const step = await attempt(mid, "narrow");
    if (step.pass) best = step;
    else firstFail = step;
  }
  return { best, firstFail, steps, capped: best?.rps === options.maxRps };
}

export interface CapacityOptions extends Partial<SearchOptions> {
  /** A step passes with p99 below this (ms, from each request's scheduled send) and not one error. */
  p99LimitMs?: number;
  /** The measured window of each step. */
  stepSeconds?: number;
  /** Unrecorded load at the step's rate just before it. */
  warmupSeconds?: number;
  /** Rest after a passing step, ms. */
  pauseMs?: number;
  /** Rest after a failing step, ms: an overloaded server may still be working through its queue. */
  recoveryMs?: number;
  connections?: number;
  /** Told about each step as it finishes (progress lines). */
  onStep?(step: CapacityStep): void;
}

export interface CapacityStep {
  rps: number;
  phase: SearchPhase;
  pass: boolean;
  /** Why a step failed, in words. */
  verdict: string;
  /** Of the answered requests, ms from the scheduled send (a lower bound when `stoppedEarly`). */
  p50: number;
  p99: number;
  sent: number;
  errors: number;
  achievedRps: number;
  lateSends: number;
  /** The step stopped as soon as the condition had failed for certain. */
  stoppedEarly: boolean;
}

export interface CapacityResult {
  /** The highest rate that passed, 0 if none did. */
  rps: number;
  /** At that rate, ms; null if none passed. */
  p50: number | null;
  p99: number | null;
  capped: boolean;
  /** The lowest failing rate above `rps` (null if none failed): the limit lies between. */
  failedAt: number | null;
  steps: CapacityStep[];
}

const defaults = {
  p99LimitMs: 10,
  stepSeconds: 5,
  warmupSeconds: 1,
  pauseMs: 500,
  recoveryMs: 2_000,
  connections: 256,
  startRps: 200,
  growthFactor: 2,
  maxRps: 20_000,
  minRps: 10,
  narrowSteps: 3,
  trials: 3,
};

/**
 * The highest open-loop rate at which `target` answers every request with a p99 below the limit.
 * Each step runs `warmupSeconds` then `stepSeconds` at one rate, and gives up as soon as more than
 * 1 % of the step's answers have been slower than the limit (or one has failed): its p99 is then
 * over the limit whatever the rest do, and an overloaded step would otherwise run on for seconds.
 */
export async function findCapacity(target: RequestTarget, options: CapacityOptions = {}): Promise<CapacityResult> {
  const o = withDefaults(defaults, options);
  const tryRate = async (rps: number, phase: SearchPhase): Promise<CapacityStep> => {
    const planned = requestsIn(o.stepSeconds, rps);
    const r = await runOpenLoop(target, {
      rate: rps,
      durationSeconds: o.stepSeconds,
      warmupSeconds: o.warmupSeconds,
      connections: o.connections,
      giveUp: { slowerThanMs: o.p99LimitMs, slowCount: Math.floor(planned / 100) + 1, errorCount: 1 },
    });
    const pass = !r.stoppedEarly && r.errors === 0 && r.ok > 0 && r.latency.p99 < o.p99LimitMs;
    const verdict = pass
      ? "pass"
      : r.errors > 0
        ? `fail: ${r.errors} error(s), e.g. ${r.errorSamples[0] ?? "?"}`
        : r.stoppedEarly
          ? `fail: over 1 % of answers above ${o.p99LimitMs} ms, stopped early`
          : `fail: p99 ${formatMs(r.latency.p99)} ms`;
    const step: CapacityStep = {
      rps,
      phase,
      pass,
      verdict,
      p50: round3(r.latency.p50),
      p99: round3(r.latency.p99),
      sent: r.sent,
      errors: r.errors,
      achievedRps: Math.round(r.achievedRate),
      lateSends: r.lateSends,
      stoppedEarly: r.stoppedEarly,
    };
    options.onStep?.(step);
    await new Promise((resolve) => setTimeout(resolve, pass ? o.pauseMs : o.recoveryMs));
    return step;
  };
  const outcome = await searchCapacity(tryRate, o);
  return {
    rps: outcome.best?.rps ?? 0,
    p50: outcome.best?.p50 ?? null,
    p99: outcome.best?.p99 ?? null,
    capped: outcome.capped,
    failedAt: outcome.firstFail?.rps ?? null,
    steps: outcome.steps,
  };
}

/**
 * Scenario: capacity. The highest rate each path sustains with p99 under 10 ms and no errors,
 * gateway first; the direct search starts from the gateway's figure, since the upstream alone is
 * never slower than the upstream behind the gateway (a wrong guess only costs a step down).
 */
export const capacity: Scenario = {
  name: "capacity",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const clients = { direct: createTimedClient(ctx.chat.direct, 1), gateway: createTimedClient(ctx.chat.gateway, 1) };
    try {
      await verifyChatPaths(clients);
    } finally {
      await Promise.all(chatPaths.map((path) => clients[path].close()));
    }
    const search = async (path: ChatPath, startRps: number) => {
      ctx.progress(`capacity: ${path}, from ${startRps} rps`);
      return findCapacity(ctx.chat[path], {
        startRps,
        onStep: (s) => ctx.progress(`capacity: ${path} ${s.rps} rps: p99 ${formatMs(s.p99)} ms, ${s.verdict}`),
      });
    };
    const gateway = await search("gateway", defaults.startRps);
    const direct = await search("direct", Math.max(defaults.startRps, gateway.rps));
    const results: Record<ChatPath, CapacityResult> = { direct, gateway };

    const steps = chatPaths.flatMap((path) => results[path].steps.map((s) => ({ path, ...s })));
    return {
      name: "capacity",
      tables: [summaryTable(results), stepsTable(steps)],
      notes: chatPaths.flatMap((path) => notes(path, results[path])),
      data: {
        condition: { p99BelowMs: defaults.p99LimitMs, errors: 0 },
        stepSeconds: defaults.stepSeconds,
        warmupSeconds: defaults.warmupSeconds,
        trialsPerRate: defaults.trials,
        gateway: headline(gateway),
        direct: headline(direct),
        steps,
      } satisfies Json,
    };
  },
};

const round3 = (x: number) => Math.round(x * 1000) / 1000;

function headline(r: CapacityResult) {
  return { rps: r.rps, p50: r.p50, p99: r.p99, capped: r.capped, failedAt: r.failedAt };
}

function summaryTable(results: Record<ChatPath, CapacityResult>): Table {
  const row = (path: ChatPath) => {
    const r = results[path];
    const ms = (x: number | null) => (x === null ? "" : formatMs(x));
    return [path, r.capped ? `≥ ${r.rps}` : r.rps, r.failedAt ?? "", ms(r.p50), ms(r.p99)];
  };
  return {
    title:
      `capacity: highest open-loop rate with p99 < ${defaults.p99LimitMs} ms and no errors (${defaults.stepSeconds} s steps after ` +
      `${defaults.warmupSeconds} s warm-up; each rate's verdict is the majority of ${defaults.trials} tries; ms)`,
    columns: ["path", "rps", "failed at", "p50", "p99"],
    rows: [row("direct"), row("gateway")],
  };
}

function stepsTable(steps: (CapacityStep & { path: ChatPath })[]): Table {
  return {
    title: "capacity search, step by step (latency from each request's scheduled send, ms)",
    columns: ["path", "phase", "rps", "p50", "p99", "sent", "errors", "achieved rps", "late sends", "verdict"],
    rows: steps.map((s) => [s.path, s.phase, s.rps, formatMs(s.p50), formatMs(s.p99), s.sent, s.errors, s.achievedRps, s.lateSends, s.verdict]),
  };
}

function notes(path: ChatPath, r: CapacityResult): string[] {
  const out: string[] = [];
  if (r.rps === 0) out.push(`warning: ${path} failed even at ${defaults.minRps} rps`);
  if (r.capped) out.push(`${path}: passed at the search's cap, ${r.rps} rps; its capacity is at least that`);
  const fail = r.steps.find((s) => s.rps === r.failedAt);
  if (fail && fail.lateSends > fail.sent / 100) {
    out.push(
      `${path}: at ${fail.rps} rps ${fail.lateSends} of ${fail.sent} sends left over ${openLoopDefaults.lateAfterMs} ms late: the load generator shares the ` +
        "machine's cores with what it measures, so this limit is the pair's, not the server's alone",
    );
  }
  return out;
}
