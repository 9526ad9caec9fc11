import type { Response } from "express";
import type { Bus } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import {
  type ApiKey,
  type BudgetHold,
  type Budget,
  type BudgetStatus,
  type CallOutcome,
  formatInZone,
  monthOf,
  monthRange,
  parseCallOutcomeText,
  type Workspace,
} from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import type { Pricer } from "@gw/pricing";
import { addCounter, type ServiceMetrics } from "@gw/service-kit";
import type { FailureMode } from "../limits/rate-limit-gate";
import type { KeyPrincipal } from "../store/identity-store";
import type { MonthToDate } from "./month-to-date";
import { ALERT_CROSSED, BUDGET_REACHED, type BudgetScope, type BudgetStore } from "./types";
import { costNano, nanoUsd, usdText, worstCaseNano, worstUsage } from "./worst-case";

const DAY_MS = 86_400_000;
/** A month's counters outlive it by this much: a late settlement still finds its month. */
const COUNTER_GRACE_MS = 35 * DAY_MS;
/**
 * How long a hold counts if it is never settled (docs/budgets.md): a live call's, longer than any
 * call runs; a job's, longer than any job waits and runs (attempts of at most 10 minutes each).
 */
export const LIVE_HOLD_MS = 2 * 3_600_000;
export const JOB_HOLD_MS = DAY_MS;
const WARN_EVERY_MS = 10_000;
/** How long a settlement waits for others of its workspace to share one script call. */
const SETTLE_DELAY_MS = 20;

/** A zone's current month: its name, bounds and the reset as text, worked out once a month (Intl is slow). */
interface Period {
  name: string;
  from: number;
  to: number;
  reset: string;
}

interface PendingSettlement {
  hold: BudgetHold;
  keyId: string | undefined;
  end: BudgetEnd;
}

type ScopeOf = { scope: "workspace" | "key"; budget: Budget; store: BudgetScope };

export interface BudgetGateDeps {
  store: BudgetStore;
  pricer: Pricer;
  gateway: GatewayConfig;
  monthToDate: MonthToDate;
  failureMode: FailureMode;
  /** Prepended to every counter's key, as the rate limiter's prefix. */
  prefix: string;
  bus: Bus;
  logger: Logger;
  metrics: ServiceMetrics;
  now?: () => number;
}

/** What a request asks of the budgets: its route (for its units and prices), model and body. */
export interface BudgetAsk {
  route: string;
  model: string | undefined;
  tool: string | undefined;
  body: unknown;
  uploadBytes: number;
  /** The rate limiter's token estimate of the body, when it made one (the same walk, not done twice). */
  tokens?: { input: number; output: number };
  /** An async job's (or a batch line's): settled when it has run, so its hold lives longer. */
  job?: boolean;
}

/**
 * How a request ended, for its settlement: as the backend reported it on the answer (read when the
 * settlement is sent, with others: parsing the report cold after each answer costs several times as
 * much), or as a job's settlement message carries it.
 */
export type BudgetEnd =
  | { kind: "answer"; complete: boolean; status: number; outcomeText: string | undefined }
  | { kind: "answered"; outcome: CallOutcome | undefined }
  | { kind: "failed" };

/**
 * Monthly budgets at ingress (docs/budgets.md): each request with a budget on its workspace or key
 * holds its worst-case cost in every such scope before it is sent on, in Redis beside the rate
 * limits, and settles to its real cost once the answer is in. A hard budget without room is a 429
 * `insufficient_quota`; a soft one only alerts. A month whose counter Redis does not have starts from
 * the ledger's month-to-date spend.
 */
export class BudgetGate {
  private readonly now: () => number;
  private readonly denied: ReturnType<typeof addCounter<"scope">>;
  private readonly alerts: ReturnType<typeof addCounter<"scope" | "threshold">>;
  private readonly unavailable: ReturnType<typeof addCounter<"mode">>;
  private lastWarning = 0;
  private readonly periods = new Map<string, Period>();
  /** Each principal's scopes for a month (principals are cached by the authenticator: made once per key and month). */
  private readonly scopeCache = new WeakMap<KeyPrincipal, { period: string; scopes: ScopeOf[] }>();
  /** Settlements waiting to be sent, by workspace (one script call each: one Redis Cluster slot). */
  private pending = new Map<string, PendingSettlement[]>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: BudgetGateDeps) {
    this.now = deps.now ?? Date.now;
    this.denied = addCounter(deps.metrics, "gw_budget_denied_total", "Requests refused with 429 insufficient_quota by a hard budget, by scope", ["scope"]);
    this.alerts = addCounter(deps.metrics, "gw_budget_alerts_total", "Budget alerts sent (an alert level or a budget crossed), by scope and threshold", [
      "scope",
      "threshold",
    ]);
    this.unavailable = addCounter(
      deps.metrics,
      "gw_budget_unavailable_total",
      "Requests whose budget could not be checked (Redis or the ledger unreachable), by failure mode",
      ["mode"],
    );
  }

  /** Whether any budget applies to the key's requests (no work at all for the rest). */
  applies(principal: KeyPrincipal): boolean {
    return principal.workspace.budget !== null || principal.keyBudget !== null;
  }

  /**
   * Holds the request's worst case in every budget of its workspace and key. Answers the hold to
   * settle later (undefined when nothing applies, or when the store is unreachable and budgets fail
   * open); throws the 429 when a hard budget has no room.
   */
  async admit(principal: KeyPrincipal, ask: BudgetAsk, res?: Response): Promise<BudgetHold | undefined> {
    const at = this.now();
    const tz = principal.workspace.timezone;
    const period = this.periodOf(tz, at);
    const scopes = this.scopesOf(principal, period.name);
    if (scopes.length === 0) return undefined;
    const worst = worstCaseNano(this.deps.pricer, this.deps.gateway, { ...ask, worst: worstUsage(ask.route, ask.body, ask.uploadBytes, ask.tokens), at }) ?? 0;
    const timing = { at, ttlMs: period.to - at + COUNTER_GRACE_MS, holdUntil: at + (ask.job ? JOB_HOLD_MS : LIVE_HOLD_MS) };
    const stores = scopes.map(({ store }) => store);
    try {
      let verdict = await this.deps.store.admit(stores, worst, undefined, timing);
      if (verdict.kind === "unseeded") {
        const spend = await this.deps.monthToDate(principal.workspace.id, period.from);
        const seeds = scopes.map(({ scope }) => (scope === "workspace" ? spend.workspace : (spend.keys.get(principal.keyId) ?? 0)));
        verdict = await this.deps.store.admit(stores, worst, seeds, timing);
      }
      if (verdict.kind === "unseeded") throw new Error("budget counters were not seeded");
      if (verdict.kind === "denied") {
        const denied = scopes[verdict.index]!;
        this.denied.inc({ scope: denied.scope });
        throw this.refusal(denied.scope, denied.budget, verdict.used, period, tz);
      }
      if (res) setBudgetHeaders(res, scopes, verdict.used, worst, period.reset);
      return {
        scopes: scopes.map(({ scope, store, budget }) => ({
          scope,
          key: store.key,
          limit_nano: store.limitNano,
          hard: store.hard,
          ...(store.alertNano !== undefined ? { alert_nano: store.alertNano } : {}),
          mode: budget.mode,
          ...(budget.alert_at_percent !== undefined ? { alert_at_percent: budget.alert_at_percent } : {}),
        })),
        reserved_nano: worst,
        route: ask.route,
        ...(ask.model !== undefined ? { model: ask.model } : {}),
        at,
        until: timing.holdUntil,
        period: period.name,
      };
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      this.unavailable.inc({ mode: this.deps.failureMode });
      this.warn(err);
      if (this.deps.failureMode === "open") return undefined;
      throw new GatewayError("upstream_unavailable", "Budgets are temporarily unavailable; try again", { cause: err });
    }
  }

  /**
   * Replaces the hold by the real cost, in the background: the answer has gone out. A failed call
   * costs nothing; an abandoned one keeps its hold as spent (its real cost is not known, and the
   * upstream may have charged for it); an answered one costs its reported usage at the ledger's prices.
   */
  settle(hold: BudgetHold, workspaceId: string, keyId: string | undefined, end: BudgetEnd): void {
    const queue = this.pending.get(workspaceId);
    if (queue) queue.push({ hold, keyId, end });
    else this.pending.set(workspaceId, [{ hold, keyId, end }]);
    this.flushTimer ??= setTimeout(() => void this.flush(), SETTLE_DELAY_MS);
  }

  /** Sends every waiting settlement: one script call per workspace, a few milliseconds after the first. */
  async flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const pending = this.pending;
    this.pending = new Map();
    await Promise.all(
      [...pending].map(async ([workspaceId, queue]) => {
        try {
          const settlements = queue.map(({ hold, end }) => ({
            scopes: hold.scopes.map((s) => ({ key: s.key, limitNano: s.limit_nano, hard: s.hard, alertNano: s.alert_nano })),
            reservedNano: hold.reserved_nano,
            actualNano: this.actualOf(hold, end),
            holdUntil: hold.until,
          }));
          const crossed = await this.deps.store.settle(settlements, this.now());
          for (const [i, { hold, keyId }] of queue.entries()) {
            for (const [k, bits] of (crossed[i] ?? []).entries()) this.alert(hold, hold.scopes[k]!, bits, workspaceId, keyId);
          }
        } catch (err) {
          this.warn(err);
        }
      }),
    );
  }

  /**
   * This month's counters of a workspace and of its keys that have a budget, as the store holds them
   * (null where the month has no counter yet: no request has needed it since the last restart of
   * the counters), for the admin API and the console.
   */
  async status(workspace: Workspace, keys: readonly ApiKey[]): Promise<BudgetStatus> {
    const tz = workspace.timezone;
    const now = this.now();
    const { name: period, reset } = this.periodOf(tz, now);
    const tag = `${this.deps.prefix}bg:{${workspace.id}}`;
    const budgeted = keys.filter((k) => k.budget !== null);
    const counters = await this.deps.store.peek([`${tag}:ws:${period}`, ...budgeted.map((k) => `${tag}:key:${k.id}:${period}`)], now);
    const line = (budget: Budget | null, counter: { spent: number; held: number } | undefined) => ({
      budget,
      spent_usd: counter ? nanoUsd(counter.spent) : null,
      held_usd: counter ? nanoUsd(counter.held) : null,
      remaining_usd: budget && counter ? nanoUsd(Math.max(0, Math.round(budget.monthly_usd * 1e9) - counter.spent - counter.held)) : null,
    });
    return {
      object: "budget_status",
      workspace_id: workspace.id,
      period,
      timezone: tz,
      resets_at: reset,
      workspace: line(workspace.budget, counters[0]),
      keys: budgeted.map((k, i) => ({ key_id: k.id, ...line(k.budget, counters[i + 1]) })),
    };
  }

  private periodOf(tz: string, at: number): Period {
    const known = this.periods.get(tz);
    if (known && at >= known.from && at < known.to) return known;
    const name = monthOf(at, tz);
    const { from, to } = monthRange(name, tz);
    const period = { name, from, to, reset: formatInZone(to, tz) };
    if (this.periods.size > 1_000) this.periods.clear();
    this.periods.set(tz, period);
    return period;
  }

  /**
   * What a request really cost: a failed call nothing; a stream the caller abandoned its hold (its
   * real usage is not known, and the upstream may have charged for it); an answer its reported usage
   * at the ledger's prices.
   */
  private actualOf(hold: BudgetHold, end: BudgetEnd): number {
    if (end.kind === "failed") return 0;
    if (end.kind === "answered") return this.costOf(hold, end.outcome);
    const outcome = parseCallOutcomeText(end.outcomeText);
    const used = outcome?.usage !== undefined || outcome?.units !== undefined;
    if (!end.complete && outcome?.usage === undefined) return hold.reserved_nano;
    if (end.status >= 400 && !used) return 0;
    return this.costOf(hold, outcome);
  }

  private costOf(hold: BudgetHold, outcome: CallOutcome | undefined): number {
    if (!outcome || (outcome.usage === undefined && outcome.units === undefined)) return 0;
    const input = {
      model: hold.model ?? outcome.model,
      provider: outcome.provider,
      upstream_model: outcome.upstream_model,
      route: hold.route,
      usage: outcome.usage,
      units: outcome.units,
      at: hold.at,
    };
    return costNano(this.deps.pricer, input, "nearest") ?? 0;
  }

  private alert(hold: BudgetHold, scope: BudgetHold["scopes"][number], bits: number, workspaceId: string, keyId: string | undefined): void {
    for (const [bit, threshold] of [
      [ALERT_CROSSED, "alert"],
      [BUDGET_REACHED, "budget"],
    ] as const) {
      if ((bits & bit) === 0) continue;
      this.alerts.inc({ scope: scope.scope, threshold });
      const alert = {
        workspace_id: workspaceId,
        ...(scope.scope === "key" && keyId !== undefined ? { key_id: keyId } : {}),
        scope: scope.scope,
        threshold,
        period: hold.period,
        mode: scope.mode,
        budget_usd: scope.limit_nano / 1e9,
        ...(scope.alert_at_percent !== undefined ? { alert_at_percent: scope.alert_at_percent } : {}),
        at: this.now(),
      };
      this.deps.logger.warn(alert, threshold === "budget" ? "budget reached" : "budget alert level crossed");
      this.deps.bus.publish("budget.alert", alert).catch((err: unknown) => this.deps.logger.warn({ err }, "could not publish a budget alert"));
    }
  }

  private scopesOf(principal: KeyPrincipal, period: string): ScopeOf[] {
    const known = this.scopeCache.get(principal);
    if (known?.period === period) return known.scopes;
    const tag = `${this.deps.prefix}bg:{${principal.workspace.id}}`;
    const scopes: ScopeOf[] = [];
    const ws = principal.workspace.budget;
    if (ws) scopes.push(scopeOf("workspace", ws, `${tag}:ws:${period}`));
    if (principal.keyBudget) scopes.push(scopeOf("key", principal.keyBudget, `${tag}:key:${principal.keyId}:${period}`));
    this.scopeCache.set(principal, { period, scopes });
    return scopes;
  }

  private refusal(scope: "workspace" | "key", budget: Budget, usedNano: number, period: Period, tz: string): GatewayError {
    const limitNano = Math.round(budget.monthly_usd * 1e9);
    const whose = scope === "key" ? "this API key" : "this workspace";
    const reset = period.reset;
    const when = `${reset.slice(0, 10)} ${reset.slice(11, 16)} ${tz}`;
    return new GatewayError("insufficient_quota", `Monthly budget of $${usdText(limitNano)} reached for ${whose}; it resets on ${when}`, {
      type: "insufficient_quota",
      retryable: false,
      headers: {
        "x-should-retry": "false",
        "x-budget-limit-usd": usdText(limitNano),
        "x-budget-remaining-usd": usdText(Math.max(0, limitNano - usedNano), 6),
        "x-budget-reset": reset,
      },
    });
  }

  private warn(err: unknown): void {
    const now = Date.now();
    if (now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.deps.logger.warn(
      { err: (err as Error)?.message, failureMode: this.deps.failureMode },
      this.deps.failureMode === "open" ? "budgets unavailable; serving without them" : "budgets unavailable; refusing requests",
    );
  }
}

export type { BudgetStatus };

/**
 * A job's hold as it was made: one that comes back without its `until` passed through a service from
 * before holds had one (a rolling upgrade), and gets the life every job's hold is made with.
 */
export function jobHold(hold: BudgetHold): BudgetHold {
  return hold.until === undefined ? { ...hold, until: hold.at + JOB_HOLD_MS } : hold;
}

function scopeOf(scope: "workspace" | "key", budget: Budget, key: string): ScopeOf {
  const limitNano = Math.round(budget.monthly_usd * 1e9);
  const alertNano = budget.alert_at_percent === undefined ? undefined : Math.round((limitNano * budget.alert_at_percent) / 100);
  return { scope, budget, store: { key, limitNano, hard: budget.mode === "hard", alertNano } };
}

/** The budget with the least room left, after this request's hold: what the caller may still spend this month. */
function setBudgetHeaders(res: Response, scopes: readonly { store: BudgetScope }[], used: readonly number[], worst: number, reset: string): void {
  let tightest = 0;
  let room = Number.POSITIVE_INFINITY;
  scopes.forEach(({ store }, i) => {
    const left = store.limitNano - (used[i] ?? 0) - worst;
    if (left < room) {
      room = left;
      tightest = i;
    }
  });
  res.setHeader("x-budget-limit-usd", usdText(scopes[tightest]!.store.limitNano));
  res.setHeader("x-budget-remaining-usd", usdText(Math.max(0, room), 6));
  res.setHeader("x-budget-reset", reset);
}
