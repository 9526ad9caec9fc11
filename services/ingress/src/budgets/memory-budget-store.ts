import { ALERT_CROSSED, BUDGET_REACHED, type BudgetAdmission, type BudgetScope, type BudgetStore, type Settlement } from "./types";

interface Counter {
  spent: number;
  held: number;
  alerted: boolean;
  reached: boolean;
  expiresAt: number;
}

/** Budgets for a single process (the embedded default): budget.lua's steps on a Map. */
export class MemoryBudgetStore implements BudgetStore {
  readonly kind = "memory";
  private readonly counters = new Map<string, Counter>();

  constructor(private readonly now: () => number = Date.now) {}

  async admit(scopes: readonly BudgetScope[], worstNano: number, seeds: readonly (number | undefined)[] | undefined, ttlMs: number): Promise<BudgetAdmission> {
    const now = this.now();
    const missing: number[] = [];
    const counters = scopes.map((scope, i) => {
      let counter = this.live(scope.key, now);
      const seed = seeds?.[i];
      if (!counter && seed !== undefined) {
        counter = { spent: seed, held: 0, alerted: false, reached: false, expiresAt: now + ttlMs };
        this.counters.set(scope.key, counter);
      }
      if (!counter) missing.push(i);
      return counter;
    });
    if (missing.length > 0) return { kind: "unseeded", indexes: missing };
    const used = counters.map((c) => c!.spent + c!.held);
    for (const [i, scope] of scopes.entries()) {
      const u = used[i]!;
      if (scope.hard && (u >= scope.limitNano || u + worstNano > scope.limitNano)) return { kind: "denied", index: i, used: u };
    }
    for (const counter of counters) counter!.held += worstNano;
    return { kind: "admitted", used };
  }

  async settle(settlements: readonly Settlement[]): Promise<number[][]> {
    const now = this.now();
    return settlements.map(({ scopes, reservedNano, actualNano }) =>
      scopes.map((scope) => {
        const counter = this.live(scope.key, now);
        if (!counter) return 0;
        const before = counter.spent;
        counter.spent += actualNano;
        counter.held = Math.max(0, counter.held - reservedNano);
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

  async peek(keys: readonly string[]): Promise<({ spent: number; held: number } | undefined)[]> {
    const now = this.now();
    return keys.map((key) => {
      const counter = this.live(key, now);
      return counter && { spent: counter.spent, held: counter.held };
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
