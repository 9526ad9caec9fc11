/**
 * Rate limiting, per workspace and per key, for requests and tokens per window.
 *
 * The algorithm (the same in Redis and in memory): a sliding window of `buckets` sub-windows.
 * Each scope keeps a count per bucket and running totals; a request is admitted when, for both
 * scopes and both dimensions, the usage in the last `buckets` buckets plus its cost fits the limit.
 * Unlike a fixed window, a burst at a window edge cannot get twice the limit through; unlike a token
 * bucket, at most the limit (to within one bucket's width) is admitted in any window.
 */

export type Scope = "workspace" | "key";
export type Dimension = "requests" | "tokens";

export interface Limit {
  requests: number;
  tokens: number;
}

export interface AdmitRequest {
  workspaceId: string;
  keyId: string;
  workspace: Limit;
  key: Limit;
  /** The token reservation: an estimate, settled later against the real usage. */
  tokens: number;
  /** A block to charge at once instead of this request alone (see LeaseAsk). */
  lease?: LeaseAsk;
}

/**
 * A block of requests and tokens, the request's own included, charged at once (see LeasingLimiter)
 * only when, in both scopes and both dimensions, the room left is at least `share` times the block,
 * by the store's own counts at that moment; otherwise the request alone is checked and charged.
 */
export interface LeaseAsk extends Limit {
  share: number;
}

export interface DimensionStatus {
  limit: number;
  remaining: number;
  /** Milliseconds until the window has no usage left (OpenAI's "resets to its initial state"). */
  resetMs: number;
}

/** What the response headers say: for each dimension, the scope with the least room left. */
export interface RateStatus {
  requests: DimensionStatus;
  tokens: DimensionStatus;
}

/** Hands the reservation to `settle` once the real usage is known. */
export interface Ticket {
  workspaceId: string;
  keyId: string;
  bucket: number;
  tokens: number;
}

export interface Denial {
  scope: Scope;
  dimension: Dimension;
  limit: number;
  used: number;
  requested: number;
  /** Milliseconds until the request would fit; undefined when it can never fit (cost > limit). */
  retryAfterMs: number | undefined;
}

/** A block charged at once: the requests and tokens asked for, usable until its bucket ends. */
export interface Lease extends Limit {
  expiresInMs: number;
}

export type Admission = { allowed: true; status: RateStatus; ticket: Ticket; lease?: Lease } | { allowed: false; status: RateStatus; denial: Denial };

/** Requests and tokens charged ahead to a bucket and not used: given back to that bucket. */
export interface Unused {
  workspaceId: string;
  keyId: string;
  bucket: number;
  requests: number;
  tokens: number;
}

export interface Limiter {
  readonly kind: "redis" | "memory";
  admit(request: AdmitRequest): Promise<Admission>;
  /** Replaces the ticket's reserved tokens by the actual count. */
  settle(ticket: Ticket, actualTokens: number): Promise<void>;
  /** Gives back what a lease charged and did not use; nothing once its bucket has left the window. */
  release(unused: Unused): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface WindowOptions {
  /** Length of the window; limits are per window. 60 000 in production ("per minute"). */
  windowMs: number;
  /** Sub-windows per window; the window slides one bucket at a time. */
  buckets: number;
  /** A clock for tests; by default Redis's own clock (or Date.now for memory). */
  now?: () => number;
}
