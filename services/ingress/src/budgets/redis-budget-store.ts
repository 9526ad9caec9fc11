import { readFileSync } from "node:fs";
import type { RedisClientType } from "redis";
import { RedisScript } from "../limits/redis-script";
import { type AdmitTiming, type BudgetAdmission, type BudgetScope, type BudgetStore, holdStep, passedStep, type Settlement } from "./types";

const script = new RedisScript(readFileSync(new URL("./budget.lua", import.meta.url), "utf8"));

/**
 * Budgets shared by every ingress replica, on the rate limiter's Redis connection: an admission is
 * written in the same tick as the rate limit's, so the client sends both in one write and they come
 * back in one round trip. Each admission and settlement is one script call, atomic in Redis, so
 * concurrent requests on any number of replicas never hold more than the budget.
 */
interface Waiting {
  deadline: number;
  reject(err: Error): void;
}

export class RedisBudgetStore implements BudgetStore {
  readonly kind = "redis";
  private readonly waiting = new Set<Waiting>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: RedisClientType,
    private readonly timeoutMs: number,
  ) {}

  async admit(
    scopes: readonly BudgetScope[],
    worstNano: number,
    seeds: readonly (number | undefined)[] | undefined,
    timing: AdmitTiming,
  ): Promise<BudgetAdmission> {
    const args = ["admit", String(Math.ceil(timing.ttlMs)), String(worstNano), String(passedStep(timing.at)), String(holdStep(timing.holdUntil))];
    scopes.forEach((scope, i) => {
      const seed = seeds?.[i];
      args.push(String(scope.limitNano), scope.hard ? "1" : "0", seed === undefined ? "" : String(seed));
    });
    const reply = (
      (await this.run(
        scopes.map((s) => s.key),
        args,
      )) as unknown[]
    ).map(Number);
    const [kind, ...rest] = reply;
    if (kind === 0) return { kind: "admitted", used: rest };
    if (kind === 1) return { kind: "denied", index: (rest[0] ?? 1) - 1, used: rest[1] ?? 0 };
    return { kind: "unseeded", indexes: rest.map((i) => i - 1) };
  }

  async settle(settlements: readonly Settlement[], at: number): Promise<number[][]> {
    const keys: string[] = [];
    const args = ["settle", String(passedStep(at))];
    for (const { scopes, reservedNano, actualNano, holdUntil } of settlements) {
      args.push(String(reservedNano), String(actualNano), holdUntil === undefined ? "" : String(holdStep(holdUntil)), String(scopes.length));
      for (const scope of scopes) {
        let index = keys.indexOf(scope.key);
        if (index < 0) index = keys.push(scope.key) - 1;
        args.push(String(index + 1), String(scope.limitNano), scope.alertNano === undefined ? "" : String(scope.alertNano));
      }
    }
    const flat = ((await this.run(keys, args)) as unknown[]).map(Number);
    let next = 0;
    return settlements.map(({ scopes }) => scopes.map(() => flat[next++] ?? 0));
  }

  async peek(keys: readonly string[], at: number): Promise<({ spent: number; held: number } | undefined)[]> {
    const passed = passedStep(at);
    const replies = await Promise.all(keys.map((key) => this.client.hGetAll(key)));
    return replies.map((fields) => {
      if (fields.s === undefined) return undefined;
      // Less the holds of steps that have passed, which the next admission drops.
      let held = Number(fields.h ?? 0);
      for (const [name, value] of Object.entries(fields)) if (name.startsWith("e") && Number(name.slice(1)) <= passed) held -= Number(value);
      return { spent: Number(fields.s), held: Math.max(0, held) };
    });
  }

  async close(): Promise<void> {
    // The connection is the rate limiter's, closed with it.
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /**
   * Runs the script within the time limit. One sweep timer for every call in flight, not a timer per
   * call: arming and clearing a timer for each request cost more than the rest of the call.
   */
  private run(keys: string[], args: string[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { deadline: Date.now() + this.timeoutMs, reject };
      this.waiting.add(waiting);
      this.sweeper ??= setInterval(() => this.sweep(), Math.max(10, Math.min(this.timeoutMs / 4, 250)));
      script.run(this.client, keys, args).then(
        (value) => {
          this.waiting.delete(waiting);
          resolve(value);
        },
        (err: unknown) => {
          this.waiting.delete(waiting);
          reject(err);
        },
      );
    });
  }

  private sweep(): void {
    const now = Date.now();
    for (const waiting of this.waiting) {
      if (waiting.deadline > now) continue;
      this.waiting.delete(waiting);
      waiting.reject(new Error(`Redis did not answer within ${this.timeoutMs} ms`));
    }
    if (this.waiting.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}
