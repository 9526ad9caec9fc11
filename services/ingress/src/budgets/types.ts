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

/**
 * Holds stop counting in steps of this much: a hold is filed under the step its life ends in, and a
 * step's holds are dropped together once it has passed (one field per step, not one per hold).
 */
export const HOLD_STEP_MS = 300_000;

/** The step a hold that lives until `until` is filed under: the first that starts at or after it. */
export const holdStep = (until: number): number => Math.ceil(until / HOLD_STEP_MS);

/** The steps that have passed at `now`: holds filed under any of them count no more. */
export const passedStep = (now: number): number => Math.floor(now / HOLD_STEP_MS);

/** When an admission is made and how long what it holds and what it writes last. */
export interface AdmitTiming {
  /** Now, as the gate reads it: holds whose life has ended count no more. */
  at: number;
  /** How long a counter the admission starts lives (past its month's end). */
  ttlMs: number;
  /**
   * When the hold stops counting if it is never settled: its settlement was lost with a process that
   * died mid-call, or with the answer to a batch's admission. Settling it later changes only the spend.
   */
  holdUntil: number;
}

/** A hold replaced by the real cost. */
export interface Settlement {
  scopes: readonly BudgetScope[];
  reservedNano: number;
  actualNano: number;
  /** The hold's `holdUntil` (undefined for a hold made before holds had one: it counts until settled). */
  holdUntil?: number;
}

export interface BudgetStore {
  readonly kind: "redis" | "memory";
  /**
   * Checks every hard scope (spend + holds + worst ≤ limit, and spend + holds < limit) and, when all
   * pass, holds `worstNano` in every scope, atomically. `seeds` (by scope) start a month's counter
   * that does not exist yet; a counter that exists keeps its value. Holds whose life has ended by
   * `timing.at` are dropped first.
   */
  admit(scopes: readonly BudgetScope[], worstNano: number, seeds: readonly (number | undefined)[] | undefined, timing: AdmitTiming): Promise<BudgetAdmission>;
  /**
   * Each settlement releases its `reservedNano` (what its step still holds of it; nothing once the
   * step has passed by `at`) and adds its `actualNano` to every one of its scopes' spend, in order;
   * answers, per settlement and scope, the thresholds this crossed for the first time in the month
   * (a bit set of ALERT_CROSSED and BUDGET_REACHED). A scope whose counter is gone (Redis flushed)
   * is left to its next seed. The settlements of one call belong to one workspace.
   */
  settle(settlements: readonly Settlement[], at: number): Promise<number[][]>;
  /** Each counter's spend and holds as they stand at `at` (undefined: no counter for the month). */
  peek(keys: readonly string[], at: number): Promise<({ spent: number; held: number } | undefined)[]>;
  close(): Promise<void>;
}
