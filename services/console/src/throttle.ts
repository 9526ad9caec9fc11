import { GatewayError } from "@gw/errors";
import type { PeopleStore } from "./store";

export interface ThrottleLimits {
  /** Failed sign-ins allowed per account within the window before it is refused. */
  perAccount: number;
  /** Failed sign-ins allowed per client address within the window (many accounts from one place). */
  perAddress: number;
  windowMs: number;
}

export const defaultThrottleLimits: ThrottleLimits = { perAccount: 5, perAddress: 30, windowMs: 15 * 60_000 };

/**
 * Password guessing, slowed per account and per address, in the console's own database so every
 * replica counts the same failures. A refused attempt checks no password (it costs nothing) and
 * says when to come back; a success clears the account's count.
 */
export class SignInThrottle {
  constructor(
    private readonly store: PeopleStore,
    private readonly clock: () => number,
    private readonly limits: ThrottleLimits = defaultThrottleLimits,
  ) {}

  async check(email: string, address: string): Promise<void> {
    const now = this.clock();
    const counts = await this.store.failures([account(email), place(address)], now - this.limits.windowMs);
    for (const [subject, limit] of [
      [account(email), this.limits.perAccount],
      [place(address), this.limits.perAddress],
    ] as const) {
      const seen = counts.get(subject);
      if (seen && seen.count >= limit) {
        const retryAfter = Math.max(1, Math.ceil((seen.oldest + this.limits.windowMs - now) / 1000));
        throw new GatewayError("too_many_auth_failures", `Too many failed sign-ins; try again in ${retryAfter} seconds`, {
          headers: { "retry-after": String(retryAfter) },
          retryable: false,
        });
      }
    }
  }

  failed(email: string, address: string): Promise<void> {
    return this.store.recordFailure([account(email), place(address)], this.clock());
  }

  succeeded(email: string): Promise<void> {
    return this.store.clearFailures(account(email));
  }

  get windowMs(): number {
    return this.limits.windowMs;
  }
}

const account = (email: string) => `email:${email}`;
const place = (address: string) => `ip:${address}`;
