import type { Admission, AdmitRequest, Limit, Limiter, Ticket, Unused, WindowOptions } from "./types";
import { toAdmission, type WindowVerdict } from "./window";

interface Counts {
  r: number;
  t: number;
}

interface ScopeState {
  /** Oldest live bucket. */
  o: number;
  totals: Counts;
  buckets: Map<number, Counts>;
}

/**
 * The embedded default's limiter: the steps of sliding-window.lua, on a Map in this process.
 * Scopes idle for a whole window are swept, so memory follows the active keys only.
 */
export class MemoryLimiter implements Limiter {
  readonly kind = "memory";
  private readonly scopes = new Map<string, ScopeState>();
  private readonly width: number;
  private readonly n: number;
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: WindowOptions) {
    this.n = options.buckets;
    this.width = options.windowMs / options.buckets;
    this.now = options.now ?? Date.now;
    this.sweeper = setInterval(() => this.sweep(), options.windowMs);
    this.sweeper.unref();
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const now = this.now();
    const cur = Math.floor(now / this.width);
    const ws = this.evict(`w:${request.workspaceId}`, cur);
    const key = this.evict(`k:${request.keyId}`, cur);
    const lease = request.lease;
    // The block is charged only when the room left holds `share` times it (as the Lua script checks).
    const room = lease && lease.share >= 1 ? { requests: lease.requests * lease.share, tokens: lease.tokens * lease.share } : undefined;
    if (lease && room && lease.requests > 1 && lease.tokens >= request.tokens && this.fits(request, ws, key, room)) {
      this.chargeBoth(request, lease, cur);
      return toAdmission(request, { ...this.counters(request, now, cur), failed: 0, waitMs: 0, leased: 1 }, this.width, this.n);
    }
    const checks = [
      { state: ws, field: "r", used: ws?.totals.r ?? 0, cost: 1, limit: request.workspace.requests },
      { state: ws, field: "t", used: ws?.totals.t ?? 0, cost: request.tokens, limit: request.workspace.tokens },
      { state: key, field: "r", used: key?.totals.r ?? 0, cost: 1, limit: request.key.requests },
      { state: key, field: "t", used: key?.totals.t ?? 0, cost: request.tokens, limit: request.key.tokens },
    ] as const;
    let failed = 0;
    let wait = 0;
    checks.forEach((c, i) => {
      if (c.used + c.cost <= c.limit) return;
      const w = this.waitFor(c.state, c.field, c.used, c.cost, c.limit, now, cur);
      if (failed === 0 || (wait !== -1 && (w === -1 || w > wait))) {
        failed = i + 1;
        wait = w;
      }
    });
    if (failed === 0) this.chargeBoth(request, { requests: 1, tokens: request.tokens }, cur);
    return toAdmission(request, { ...this.counters(request, now, cur), failed, waitMs: wait, leased: 0 }, this.width, this.n);
  }

  async settle(ticket: Ticket, actualTokens: number): Promise<void> {
    this.adjust(ticket, "t", actualTokens - ticket.tokens);
  }

  async release(unused: Unused): Promise<void> {
    this.adjust(unused, "t", -unused.tokens);
    this.adjust(unused, "r", -unused.requests);
  }

  /** `delta` more (or fewer) in a past bucket, never below zero; once it has left the window, only an excess counts, from now. */
  private adjust(at: { workspaceId: string; keyId: string; bucket: number }, field: "r" | "t", delta: number): void {
    if (delta === 0) return;
    const cur = Math.floor(this.now() / this.width);
    for (const id of [`w:${at.workspaceId}`, `k:${at.keyId}`]) {
      const state = this.evict(id, cur);
      if (at.bucket >= cur - this.n + 1 && state) {
        const have = state.buckets.get(at.bucket)?.[field] ?? 0;
        const d = have + delta < 0 ? -have : delta;
        if (d !== 0) this.charge(id, field, d, at.bucket);
      } else if (delta > 0) {
        this.charge(id, field, delta, cur);
      }
    }
  }

  private fits(request: AdmitRequest, ws: ScopeState | undefined, key: ScopeState | undefined, cost: Limit): boolean {
    return (
      (ws?.totals.r ?? 0) + cost.requests <= request.workspace.requests &&
      (ws?.totals.t ?? 0) + cost.tokens <= request.workspace.tokens &&
      (key?.totals.r ?? 0) + cost.requests <= request.key.requests &&
      (key?.totals.t ?? 0) + cost.tokens <= request.key.tokens
    );
  }

  private chargeBoth(request: AdmitRequest, cost: Limit, cur: number): void {
    for (const id of [`w:${request.workspaceId}`, `k:${request.keyId}`]) {
      this.charge(id, "r", cost.requests, cur);
      if (cost.tokens > 0) this.charge(id, "t", cost.tokens, cur);
    }
  }

  /** The counters as the script returns them: the usage in the window, this call's charge included. */
  private counters(request: AdmitRequest, now: number, cur: number): Omit<WindowVerdict, "failed" | "waitMs" | "leased"> {
    const ws = this.scopes.get(`w:${request.workspaceId}`)?.totals;
    const key = this.scopes.get(`k:${request.keyId}`)?.totals;
    return { now, bucket: cur, wsRequests: ws?.r ?? 0, wsTokens: ws?.t ?? 0, keyRequests: key?.r ?? 0, keyTokens: key?.t ?? 0 };
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.scopes.clear();
  }

  private evict(id: string, cur: number): ScopeState | undefined {
    const state = this.scopes.get(id);
    if (!state) return undefined;
    const oldest = cur - this.n + 1;
    if (state.o >= oldest) return state;
    if (state.o + this.n - 1 < oldest) {
      this.scopes.delete(id);
      return undefined;
    }
    for (let i = state.o; i < oldest; i++) {
      const counts = state.buckets.get(i);
      if (!counts) continue;
      state.totals.r -= counts.r;
      state.totals.t -= counts.t;
      state.buckets.delete(i);
    }
    state.o = oldest;
    return state;
  }

  private waitFor(state: ScopeState | undefined, field: "r" | "t", used: number, cost: number, limit: number, now: number, cur: number): number {
    if (cost > limit) return -1;
    const need = used + cost - limit;
    let freed = 0;
    for (let i = cur - this.n + 1; i <= cur; i++) {
      freed += state?.buckets.get(i)?.[field] ?? 0;
      if (freed >= need) return (i + this.n) * this.width - now;
    }
    return this.n * this.width;
  }

  private charge(id: string, field: "r" | "t", amount: number, bucket: number): void {
    let state = this.scopes.get(id);
    if (!state) {
      state = { o: bucket, totals: { r: 0, t: 0 }, buckets: new Map() };
      this.scopes.set(id, state);
    }
    // A late settlement can land before a state that was swept and started again: keep `o` the oldest.
    if (bucket < state.o) state.o = bucket;
    let counts = state.buckets.get(bucket);
    if (!counts) {
      counts = { r: 0, t: 0 };
      state.buckets.set(bucket, counts);
    }
    counts[field] += amount;
    state.totals[field] += amount;
  }

  private sweep(): void {
    const cur = Math.floor(this.now() / this.width);
    for (const id of [...this.scopes.keys()]) this.evict(id, cur);
  }
}
