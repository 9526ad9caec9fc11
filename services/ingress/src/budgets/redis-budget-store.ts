import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { RedisClientType } from "redis";
import type { BudgetAdmission, BudgetScope, BudgetStore } from "./types";

const script = readFileSync(new URL("./budget.lua", import.meta.url), "utf8");
const scriptSha = createHash("sha1").update(script).digest("hex");

/**
 * Budgets shared by every ingress replica, on the rate limiter's Redis connection: an admission is
 * written in the same tick as the rate limit's, so the client sends both in one write and they come
 * back in one round trip. Each admission and settlement is one script call, atomic in Redis, so
 * concurrent requests on any number of replicas never hold more than the budget.
 */
export class RedisBudgetStore implements BudgetStore {
  readonly kind = "redis";

  constructor(
    private readonly client: RedisClientType,
    private readonly timeoutMs: number,
  ) {}

  async admit(scopes: readonly BudgetScope[], worstNano: number, seeds: readonly (number | undefined)[] | undefined, ttlMs: number): Promise<BudgetAdmission> {
    const args = ["admit", String(Math.ceil(ttlMs)), String(worstNano)];
    scopes.forEach((scope, i) => {
      const seed = seeds?.[i];
      args.push(String(scope.limitNano), scope.hard ? "1" : "0", seed === undefined ? "" : String(seed));
    });
    const reply = ((await this.run(scopes, args)) as unknown[]).map(Number);
    const [kind, ...rest] = reply;
    if (kind === 0) return { kind: "admitted", used: rest };
    if (kind === 1) return { kind: "denied", index: (rest[0] ?? 1) - 1, used: rest[1] ?? 0 };
    return { kind: "unseeded", indexes: rest.map((i) => i - 1) };
  }

  async settle(scopes: readonly BudgetScope[], reservedNano: number, actualNano: number): Promise<number[]> {
    const args = ["settle", String(reservedNano), String(actualNano)];
    for (const scope of scopes) args.push(String(scope.limitNano), scope.alertNano === undefined ? "" : String(scope.alertNano));
    return ((await this.run(scopes, args)) as unknown[]).map(Number);
  }

  async peek(keys: readonly string[]): Promise<({ spent: number; held: number } | undefined)[]> {
    const replies = await Promise.all(keys.map((key) => this.client.hmGet(key, ["s", "h"])));
    return replies.map(([spent, held]) => (spent === null || spent === undefined ? undefined : { spent: Number(spent), held: Number(held ?? 0) }));
  }

  async close(): Promise<void> {
    // The connection is the rate limiter's, closed with it.
  }

  /** Runs the script within the time limit (a cleared timer, as RedisLimiter does, for the same reason). */
  private async run(scopes: readonly BudgetScope[], args: string[]): Promise<unknown> {
    const keys = scopes.map((s) => s.key);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return await Promise.race([this.call(keys, args), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async call(keys: string[], args: string[]): Promise<unknown> {
    try {
      return await this.client.evalSha(scriptSha, { keys, arguments: args });
    } catch (err) {
      if (!(err as Error).message?.startsWith("NOSCRIPT")) throw err;
      return this.client.eval(script, { keys, arguments: args });
    }
  }
}
