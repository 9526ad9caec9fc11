import type { Response } from "express";
import type { Bus } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import { type ApiKey, type BudgetHold, type Budget, type CallOutcome, formatInZone, monthOf, monthRange, type Workspace } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import type { Pricer } from "@gw/pricing";
import { addCounter, type ServiceMetrics } from "@gw/service-kit";
import type { FailureMode } from "../limits/rate-limit-gate";
import type { KeyPrincipal } from "../store/identity-store";
import type { MonthToDate } from "./month-to-date";
import { ALERT_CROSSED, BUDGET_REACHED, type BudgetScope, type BudgetStore } from "./types";
import { nanoOf, nanoUsd, usdText, worstCaseNano, worstUsage } from "./worst-case";

const DAY_MS = 86_400_000;
/** A month's counters outlive it by this much: a late settlement still finds its month. */
const COUNTER_GRACE_MS = 35 * DAY_MS;
const WARN_EVERY_MS = 10_000;

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
}

/** How a request ended, for its settlement. */
export type BudgetEnd = { kind: "answered"; outcome: CallOutcome | undefined } | { kind: "failed" } | { kind: "abandoned" };

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
  async admit(principal: KeyPrincipal, ask: BudgetAsk, res: Response): Promise<BudgetHold | undefined> {
    const at = this.now();
    const tz = principal.workspace.timezone;
    const period = monthOf(at, tz);
    const { to: resetAt } = monthRange(period, tz);
    const scopes = this.scopesOf(principal, period);
    if (scopes.length === 0) return undefined;
    const worst = worstCaseNano(this.deps.pricer, this.deps.gateway, { ...ask, worst: worstUsage(ask.route, ask.body, ask.uploadBytes), at }) ?? 0;
    const ttlMs = resetAt - at + COUNTER_GRACE_MS;
    const stores = scopes.map(({ store }) => store);
    try {
      let verdict = await this.deps.store.admit(stores, worst, undefined, ttlMs);
      if (verdict.kind === "unseeded") {
        const spend = await this.deps.monthToDate(principal.workspace.id, monthRange(period, tz).from);
        const seeds = scopes.map(({ scope }) => (scope === "workspace" ? spend.workspace : (spend.keys.get(principal.keyId) ?? 0)));
        verdict = await this.deps.store.admit(stores, worst, seeds, ttlMs);
      }
      if (verdict.kind === "unseeded") throw new Error("budget counters were not seeded");
      if (verdict.kind === "denied") {
        const denied = scopes[verdict.index]!;
        this.denied.inc({ scope: denied.scope });
        throw this.refusal(denied.scope, denied.budget, verdict.used, resetAt, tz);
      }
      setBudgetHeaders(res, scopes, verdict.used, worst, resetAt, tz);
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
        period,
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
    const actual = end.kind === "failed" ? 0 : end.kind === "abandoned" ? hold.reserved_nano : this.costOf(hold, end.outcome);
    const scopes: BudgetScope[] = hold.scopes.map((s) => ({ key: s.key, limitNano: s.limit_nano, hard: s.hard, alertNano: s.alert_nano }));
    this.deps.store.settle(scopes, hold.reserved_nano, actual).then(
      (crossed) => {
        for (const [i, bits] of crossed.entries()) this.alert(hold, hold.scopes[i]!, bits, workspaceId, keyId);
      },
      (err: unknown) => this.warn(err),
    );
  }

  /**
   * This month's counters of a workspace and of its keys that have a budget, as the store holds them
   * (null where the month has no counter yet: no request has needed it since the last restart of
   * the counters), for the admin API and the console.
   */
  async status(workspace: Workspace, keys: readonly ApiKey[]): Promise<BudgetStatus> {
    const at = this.now();
    const tz = workspace.timezone;
    const period = monthOf(at, tz);
    const tag = `${this.deps.prefix}bg:{${workspace.id}}`;
    const budgeted = keys.filter((k) => k.budget !== null);
    const counters = await this.deps.store.peek([`${tag}:ws:${period}`, ...budgeted.map((k) => `${tag}:key:${k.id}:${period}`)]);
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
      resets_at: formatInZone(monthRange(period, tz).to, tz),
      workspace: line(workspace.budget, counters[0]),
      keys: budgeted.map((k, i) => ({ key_id: k.id, ...line(k.budget, counters[i + 1]) })),
    };
  }

  private costOf(hold: BudgetHold, outcome: CallOutcome | undefined): number {
    if (!outcome || (outcome.usage === undefined && outcome.units === undefined)) return 0;
    const priced = this.deps.pricer.price({
      model: hold.model ?? outcome.model,
      provider: outcome.provider,
      upstream_model: outcome.upstream_model,
      route: hold.route,
      usage: outcome.usage,
      units: outcome.units,
      at: hold.at,
    });
    return priced.cost_usd === null ? 0 : nanoOf(priced.cost_usd, "half-up");
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

  private scopesOf(principal: KeyPrincipal, period: string): { scope: "workspace" | "key"; budget: Budget; store: BudgetScope }[] {
    const tag = `${this.deps.prefix}bg:{${principal.workspace.id}}`;
    const out: { scope: "workspace" | "key"; budget: Budget; store: BudgetScope }[] = [];
    const add = (scope: "workspace" | "key", budget: Budget | null, key: string) => {
      if (!budget) return;
      const limitNano = Math.round(budget.monthly_usd * 1e9);
      const alertNano = budget.alert_at_percent === undefined ? undefined : Math.round((limitNano * budget.alert_at_percent) / 100);
      out.push({ scope, budget, store: { key, limitNano, hard: budget.mode === "hard", alertNano } });
    };
    add("workspace", principal.workspace.budget, `${tag}:ws:${period}`);
    add("key", principal.keyBudget, `${tag}:key:${principal.keyId}:${period}`);
    return out;
  }

  private refusal(scope: "workspace" | "key", budget: Budget, usedNano: number, resetAt: number, tz: string): GatewayError {
    const limitNano = Math.round(budget.monthly_usd * 1e9);
    const whose = scope === "key" ? "this API key" : "this workspace";
    const reset = formatInZone(resetAt, tz);
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

interface BudgetLine {
  budget: Budget | null;
  spent_usd: string | null;
  held_usd: string | null;
  remaining_usd: string | null;
}

export interface BudgetStatus {
  object: "budget_status";
  workspace_id: string;
  period: string;
  timezone: string;
  resets_at: string;
  workspace: BudgetLine;
  keys: (BudgetLine & { key_id: string })[];
}

/** The budget with the least room left, after this request's hold: what the caller may still spend this month. */
function setBudgetHeaders(res: Response, scopes: readonly { store: BudgetScope }[], used: readonly number[], worst: number, resetAt: number, tz: string): void {
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
  res.setHeader("x-budget-reset", formatInZone(resetAt, tz));
}
