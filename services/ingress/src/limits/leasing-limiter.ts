import { performance } from "node:perf_hooks";
import type { Admission, AdmitRequest, DimensionStatus, LeaseAsk, Limit, Limiter, RateStatus, Ticket, Unused } from "./types";

/**
 * A lease takes at most this share of the room left (1/50), in both scopes and dimensions, by the
 * store's own counts when it is charged: far from its limits a key is admitted by the replica alone
 * most of the time; near them, a lease would be under two requests and every request goes to the
 * store, exactly as without leases.
 */
const LEASE_SHARE = 50;
/** The most requests one lease takes: about a tenth of a second of a busy key on one replica. */
const MAX_LEASE_REQUESTS = 100;
/**
 * And at most this many times the key's own pace on this replica (its admissions in the last bucket,
 * or in this one so far), so a slow key holds back little room and a new burst's blocks grow
 * 4, 12, 36, then 100 requests.
 */
const PACE_FACTOR = 2;

interface Held {
  workspaceId: string;
  keyId: string;
  /** The bucket the block was charged to: every request admitted from it counts there. */
  bucket: number;
  workspace: Limit;
  key: Limit;
  /** What is left of the block. */
  requests: number;
  tokens: number;
  /** On this process's clock: the bucket's end, or a little before it. */
  expiresAt: number;
  takenAt: number;
  /** The store's answer when the block was taken (the block counted as used). */
  status: RateStatus;
}

interface KeyState {
  /** The store's last answer for this key, which sizes the next lease. */
  status: RateStatus;
  seenAt: number;
  lease?: Held;
  /** Admissions on this replica in the current bucket (by this process's clock) and the one before. */
  period: number;
  current: number;
  previous: number;
  /** A lease is being asked for: other requests meanwhile go to the store alone, not for blocks of their own. */
  asking: boolean;
}

export interface LeasingOptions {
  windowMs: number;
  /** One bucket's width: how often ended blocks' unused parts are given back for keys gone quiet. */
  bucketMs: number;
  /**
   * This process's clock, by default a monotonic one (a wall clock set back would stretch a block
   * past its bucket); tests move it by hand. Only durations are read from it.
   */
  now?: () => number;
}

/**
 * Takes rate-limit room from the shared store in blocks (leases) and admits from a block here, so
 * most requests of a busy key cost no round trip to Redis. The limits stay exact across replicas: a
 * block is charged to the store in full when it is taken, into the bucket current then, and is used
 * only until that bucket ends, so every request still counts in the bucket it was admitted in; what a
 * block did not use is given back to that bucket. What a replica holds unused is room the others
 * cannot have for the rest of the bucket (at most a second), which is why a lease is a small share of
 * the room left and about twice the key's own pace here, and none near a limit.
 */
export class LeasingLimiter implements Limiter {
  private readonly keys = new Map<string, KeyState>();
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly inner: Limiter,
    private readonly options: LeasingOptions,
  ) {
    this.now = options.now ?? (() => performance.now());
    this.sweeper = setInterval(() => this.sweep(), options.bucketMs);
    this.sweeper.unref();
  }

  get kind(): Limiter["kind"] {
    return this.inner.kind;
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const id = `${request.workspaceId}/${request.keyId}`;
    const now = this.now();
    const state = this.keys.get(id);
    const held = state?.lease;
    if (state) {
      this.pace(state, now);
      state.seenAt = now;
    }
    if (state && held) {
      if (now < held.expiresAt && sameLimits(held, request) && held.requests >= 1 && held.tokens >= request.tokens) {
        held.requests -= 1;
        held.tokens -= request.tokens;
        state.current++;
        const ticket: Ticket = { workspaceId: request.workspaceId, keyId: request.keyId, bucket: held.bucket, tokens: request.tokens };
        return { allowed: true, status: statusWith(held, now), ticket };
      }
      state.lease = undefined;
      this.giveBack(held);
    }
    const lease = state && !state.asking ? leaseFor(request, state) : undefined;
    if (!state || !lease) return this.remember(id, request, await this.inner.admit(request), now);
    state.asking = true;
    try {
      return this.remember(id, request, await this.inner.admit({ ...request, lease }), now);
    } finally {
      state.asking = false;
    }
  }

  settle(ticket: Ticket, actualTokens: number): Promise<void> {
    return this.inner.settle(ticket, actualTokens);
  }

  release(unused: Unused): Promise<void> {
    return this.inner.release(unused);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const state of this.keys.values()) if (state.lease) this.giveBack(state.lease);
    this.keys.clear();
    await this.inner.close();
  }

  /** Keeps the store's answer and any block it charged; the caller sees the room this replica has. */
  private remember(id: string, request: AdmitRequest, admission: Admission, sentAt: number): Admission {
    let state = this.keys.get(id);
    if (!state) {
      state = { status: admission.status, seenAt: sentAt, period: Math.floor(sentAt / this.options.bucketMs), current: 0, previous: 0, asking: false };
      this.keys.set(id, state);
    }
    state.status = admission.status;
    state.seenAt = sentAt;
    if (admission.allowed) state.current++;
    if (!admission.allowed || !admission.lease) return admission;
    const { lease, ticket } = admission;
    const fresh: Held = {
      workspaceId: request.workspaceId,
      keyId: request.keyId,
      bucket: ticket.bucket,
      workspace: request.workspace,
      key: request.key,
      requests: lease.requests - 1,
      tokens: lease.tokens - request.tokens,
      // The store's clock read the bucket's time left after we sent: counted from the send, it ends early if anything.
      expiresAt: sentAt + lease.expiresInMs,
      takenAt: sentAt,
      status: admission.status,
    };
    // With one ask in flight per key none should be held here; if one is, nothing of it is lost.
    if (state.lease) this.giveBack(state.lease);
    state.lease = fresh;
    return { ...admission, status: statusWith(fresh, sentAt) };
  }

  /** Moves the key's pace on to the bucket `now` is in. */
  private pace(state: KeyState, now: number): void {
    const period = Math.floor(now / this.options.bucketMs);
    if (period === state.period) return;
    state.previous = period === state.period + 1 ? state.current : 0;
    state.current = 0;
    state.period = period;
  }

  private giveBack(held: Held): void {
    const { workspaceId, keyId, bucket, requests, tokens } = held;
    if (requests === 0 && tokens === 0) return;
    // The Redis limiter queues it with the workspace's next call; it logs a failure to send it itself.
    this.inner.release({ workspaceId, keyId, bucket, requests, tokens }).catch(() => {});
  }

  /** Gives back what ended buckets' blocks did not use, and forgets keys idle for a whole window. */
  private sweep(): void {
    const now = this.now();
    for (const [id, state] of this.keys) {
      if (state.lease && now >= state.lease.expiresAt) {
        this.giveBack(state.lease);
        state.lease = undefined;
      }
      if (!state.lease && now - state.seenAt > this.options.windowMs) this.keys.delete(id);
    }
  }
}

/**
 * A block for the next request: a small share of the room left, and about twice what the key has
 * been sending here; none when that is under two requests.
 */
function leaseFor(request: AdmitRequest, state: KeyState): LeaseAsk | undefined {
  const { status } = state;
  const pace = PACE_FACTOR * Math.max(state.previous, state.current + 1);
  let requests = Math.min(MAX_LEASE_REQUESTS, pace, Math.floor(status.requests.remaining / LEASE_SHARE));
  if (request.tokens > 0) requests = Math.min(requests, Math.floor(status.tokens.remaining / LEASE_SHARE / request.tokens));
  return requests >= 2 ? { requests, tokens: requests * request.tokens, share: LEASE_SHARE } : undefined;
}

function sameLimits(a: { workspace: Limit; key: Limit }, b: { workspace: Limit; key: Limit }): boolean {
  return (
    a.workspace.requests === b.workspace.requests &&
    a.workspace.tokens === b.workspace.tokens &&
    a.key.requests === b.key.requests &&
    a.key.tokens === b.key.tokens
  );
}

/** The headers' view: the store's answer when the block was taken, plus what is left of the block. */
function statusWith(held: Held, now: number): RateStatus {
  const elapsed = now - held.takenAt;
  return { requests: plus(held.status.requests, held.requests, elapsed), tokens: plus(held.status.tokens, held.tokens, elapsed) };
}

function plus(d: DimensionStatus, left: number, elapsed: number): DimensionStatus {
  return { limit: d.limit, remaining: Math.min(d.limit, d.remaining + left), resetMs: Math.max(0, d.resetMs - elapsed) };
}
