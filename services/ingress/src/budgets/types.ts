/**
 * Monthly budgets: month-to-date spend per scope (a workspace, a key) in integer nano-dollars (1e-9
 * USD: exact in a double up to $9 million a month, and finer than any price), held beside the rate
 * limits in Redis (or in memory for a single process). A request reserves its worst-case cost;
 * settlement replaces the reservation with the real cost.
 */

/** One scope's counter for one month, and its budget. */
export interface BudgetScope {
  /** The store's key for the scope's month, e.g. `gw:bg:{ws_1}:key:key_1:2026-11`. */
  key: string;
  limitNano: number;
  hard: boolean;
  /** Spend at which to alert once in the month; undefined: no alert short of the budget. */
  alertNano: number | undefined;
}

export type BudgetAdmission =
  /** Reserved in every scope; `used` is each scope's spend plus holds before this request. */
  | { kind: "admitted"; used: number[] }
  /** The hard budget of `scopes[index]` has no room: `used` is its spend plus holds. Nothing was reserved. */
  | { kind: "denied"; index: number; used: number }
  /** These scopes have no counter for the month yet: seed them from the ledger and ask again. Nothing was reserved. */
  | { kind: "unseeded"; indexes: number[] };

/** Settling crossed, in a scope, its alert level (ALERT_CROSSED) or its budget (BUDGET_REACHED), first time this month. */
export const ALERT_CROSSED = 1;
export const BUDGET_REACHED = 2;

/** A hold replaced by the real cost. */
export interface Settlement {
  scopes: readonly BudgetScope[];
  reservedNano: number;
  actualNano: number;
}

export interface BudgetStore {
  readonly kind: "redis" | "memory";
  /**
   * Checks every hard scope (spend + holds + worst ≤ limit, and spend + holds < limit) and, when all
   * pass, holds `worstNano` in every scope, atomically. `seeds` (by scope) start a month's counter
   * that does not exist yet; a counter that exists keeps its value. `ttlMs`: how long a counter
   * lives (past its month's end).
   */
  admit(scopes: readonly BudgetScope[], worstNano: number, seeds: readonly (number | undefined)[] | undefined, ttlMs: number): Promise<BudgetAdmission>;
  /**
   * Each settlement releases its `reservedNano` and adds its `actualNano` to every one of its scopes'
   * spend, in order; answers, per settlement and scope, the thresholds this crossed for the first
   * time in the month (a bit set of ALERT_CROSSED and BUDGET_REACHED). A scope whose counter is gone
   * (Redis flushed) is left to its next seed. The settlements of one call belong to one workspace.
   */
  settle(settlements: readonly Settlement[]): Promise<number[][]>;
  /** Each counter's spend and holds as they stand (undefined: no counter for the month). */
  peek(keys: readonly string[]): Promise<({ spent: number; held: number } | undefined)[]>;
  close(): Promise<void>;
}
