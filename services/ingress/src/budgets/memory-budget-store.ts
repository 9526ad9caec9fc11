import {
  ALERT_CROSSED,
  type AdmitTiming,
  BUDGET_REACHED,
  type BudgetAdmission,
  type BudgetScope,
  type BudgetStore,
  holdStep,
  passedStep,
  type Settlement,
} from "./types";

interface Counter {
  spent: number;
  held: number;
  /** The holds in `held`, by the step their life ends in. */
  steps: Map<number, number>;
  /** The earliest of `steps` (or earlier: a settled step is found gone at the next sweep). */
  earliest: number | undefined;
  alerted: boolean;
  reached: boolean;
  expiresAt: number;
}

/** Budgets for a single process (the embedded default): budget.lua's steps on a Map. */
export class MemoryBudgetStore implements BudgetStore {
  readonly kind = "memory";
  private readonly counters = new Map<string, Counter>();

  constructor(private readonly now: () => number = Date.now) {}

  async admit(
    scopes: readonly BudgetScope[],
    worstNano: number,
    seeds: readonly (number | undefined)[] | undefined,
    timing: AdmitTiming,
  ): Promise<BudgetAdmission> {
    const now = this.now();
    const passed = passedStep(timing.at);
    const missing: number[] = [];
    const counters = scopes.map((scope, i) => {
      let counter = this.live(scope.key, now);
      const seed = seeds?.[i];
      if (!counter && seed !== undefined) {
        counter = { spent: seed, held: 0, steps: new Map(), earliest: undefined, alerted: false, reached: false, expiresAt: now + timing.ttlMs };
        this.counters.set(scope.key, counter);
      }
      if (!counter) missing.push(i);
      else if (counter.earliest !== undefined && counter.earliest <= passed) sweep(counter, passed);
      return counter;
    });
    if (missing.length > 0) return { kind: "unseeded", indexes: missing };
    const used = counters.map((c) => c!.spent + c!.held);
    for (const [i, scope] of scopes.entries()) {
      const u = used[i]!;
      if (scope.hard && (u >= scope.limitNano || u + worstNano > scope.limitNano)) return { kind: "denied", index: i, used: u };
    }
    if (worstNano > 0) {
      const step = holdStep(timing.holdUntil);
      for (const counter of counters) {
        counter!.held += worstNano;
        counter!.steps.set(step, (counter!.steps.get(step) ?? 0) + worstNano);
        if (counter!.earliest === undefined || step < counter!.earliest) counter!.earliest = step;
      }
    }
    return { kind: "admitted", used };
  }

  async settle(settlements: readonly Settlement[], at: number): Promise<number[][]> {
    const now = this.now();
    const passed = passedStep(at);
    return settlements.map(({ scopes, reservedNano, actualNano, holdUntil }) =>
      scopes.map((scope) => {
        const counter = this.live(scope.key, now);
        if (!counter) return 0;
        let release = reservedNano;
        if (holdUntil !== undefined) {
          const step = holdStep(holdUntil);
          const filed = counter.steps.get(step);
          if (filed !== undefined) {
            // What is left of the hold under its step.
            release = Math.min(reservedNano, filed);
            if (filed > release) counter.steps.set(step, filed - release);
            else if (release > 0) counter.steps.delete(step);
          } else if (step <= passed) {
            // The step has passed: its holds were dropped from `held` already.
            release = 0;
          }
          // (No entry for a step still to come: a hold made before holds had steps, in `held` alone.)
        }
        const before = counter.spent;
        counter.spent += actualNano;
        counter.held = Math.max(0, counter.held - release);
        let crossed = 0;
        if (scope.alertNano !== undefined && before < scope.alertNano && counter.spent >= scope.alertNano && !counter.alerted) {
          counter.alerted = true;
          crossed |= ALERT_CROSSED;
        }
        if (before < scope.limitNano && counter.spent >= scope.limitNano && !counter.reached) {
          counter.reached = true;
          crossed |= BUDGET_REACHED;
        }
        return crossed;
      }),
    );
  }

  async peek(keys: readonly string[], at: number): Promise<({ spent: number; held: number } | undefined)[]> {
    const now = this.now();
    const passed = passedStep(at);
    return keys.map((key) => {
      const counter = this.live(key, now);
      // Less the holds of steps that have passed, which the next admission drops.
      return counter && { spent: counter.spent, held: heldAt(counter, passed) };
    });
  }

  async close(): Promise<void> {
    this.counters.clear();
  }

  /** Forgets every counter, as a Redis flush would (tests). */
  flush(): void {
    this.counters.clear();
  }

  private live(key: string, now: number): Counter | undefined {
    const counter = this.counters.get(key);
    if (counter && counter.expiresAt <= now) {
      this.counters.delete(key);
      return undefined;
    }
    return counter;
  }
}

/** The counter's holds less those of every passed step. */
function heldAt(counter: Counter, passed: number): number {
  let held = counter.held;
  for (const [step, filed] of counter.steps) if (step <= passed) held -= filed;
  return Math.max(0, held);
}

/** Drops the holds of every passed step (budget.lua's sweep). */
function sweep(counter: Counter, passed: number): void {
  counter.held = heldAt(counter, passed);
  for (const step of counter.steps.keys()) if (step <= passed) counter.steps.delete(step);
  counter.earliest = counter.steps.size > 0 ? Math.min(...counter.steps.keys()) : undefined;
}
