export interface FailureGuardOptions {
  /** Failed authentications allowed per address and window; 0 turns the guard off. */
  maxFailures: number;
  windowMs: number;
  /** Addresses tracked at once (least recently failing goes first), so memory stays bounded. */
  maxAddresses: number;
  now?: () => number;
}

interface Budget {
  failures: number;
  resetAt: number;
}

/**
 * Counts failed authentications per client address in fixed windows. An address that has used up
 * its budget is refused until its window ends, without a store query. Only failures are tracked:
 * a request with a known key never touches this.
 */
export class FailureGuard {
  private readonly budgets = new Map<string, Budget>();
  private readonly now: () => number;

  constructor(private readonly options: FailureGuardOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Milliseconds until the address may try again; 0 when it may try now. */
  blockedFor(address: string): number {
    if (this.options.maxFailures <= 0) return 0;
    const budget = this.budgets.get(addressKey(address));
    if (!budget || budget.failures < this.options.maxFailures) return 0;
    return Math.max(0, budget.resetAt - this.now());
  }

  record(address: string): void {
    if (this.options.maxFailures <= 0) return;
    const key = addressKey(address);
    const now = this.now();
    let budget = this.budgets.get(key);
    if (budget) this.budgets.delete(key); // re-inserted below as the most recent
    if (!budget || budget.resetAt <= now) budget = { failures: 0, resetAt: now + this.options.windowMs };
    budget.failures++;
    this.budgets.set(key, budget);
    while (this.budgets.size > this.options.maxAddresses) {
      const oldest = this.budgets.keys().next().value;
      if (oldest === undefined) break;
      this.budgets.delete(oldest);
    }
  }

  get size(): number {
    return this.budgets.size;
  }
}

/**
 * The unit a budget is kept for: an IPv4 address (also when written IPv4-mapped, `::ffff:1.2.3.4`),
 * or an IPv6 /64, since one host commonly holds a whole /64 and could otherwise rotate through it.
 * Addresses in ::/64 (loopback, IPv4-mapped in hex) are kept whole.
 */
export function addressKey(address: string): string {
  const lower = address.toLowerCase();
  if (lower.startsWith("::ffff:") && lower.includes(".")) return lower.slice(7);
  if (!lower.includes(":")) return lower;
  const [head = "", tail] = (lower.split("%")[0] ?? "").split("::");
  const front = head ? head.split(":") : [];
  const back = tail ? tail.split(":") : [];
  const zeros = tail === undefined ? 0 : Math.max(0, 8 - front.length - back.length);
  const prefix = [...front, ...Array<string>(zeros).fill("0"), ...back].slice(0, 4).map((g) => g.replace(/^0+(?=.)/, ""));
  return prefix.every((g) => g === "0") ? lower : `${prefix.join(":")}::/64`;
}
