import type { Admission, AdmitRequest, Dimension, DimensionStatus, Scope } from "./types";

/** What one admission step computes, in the order the Lua script returns it. */
export interface WindowVerdict {
  /** 0 when admitted, else the failed check: 1 ws requests, 2 ws tokens, 3 key requests, 4 key tokens. */
  failed: number;
  /** Milliseconds until the failed check would pass; -1 when it never can. */
  waitMs: number;
  now: number;
  bucket: number;
  wsRequests: number;
  wsTokens: number;
  keyRequests: number;
  keyTokens: number;
  /** 1 when the request's lease was charged instead of the request alone. */
  leased: number;
}

const checks: ReadonlyArray<{ scope: Scope; dimension: Dimension }> = [
  { scope: "workspace", dimension: "requests" },
  { scope: "workspace", dimension: "tokens" },
  { scope: "key", dimension: "requests" },
  { scope: "key", dimension: "tokens" },
];

/** Turns the counters into the answer both limiters give: header values, and the denial if any. */
export function toAdmission(request: AdmitRequest, v: WindowVerdict, widthMs: number, buckets: number): Admission {
  // Usage charged to the current bucket has fully left the window once that bucket has.
  const resetMs = (v.bucket + buckets) * widthMs - v.now;
  const status = (dimension: Dimension, wsUsed: number, keyUsed: number): DimensionStatus => {
    const ws = { limit: request.workspace[dimension], used: wsUsed };
    const key = { limit: request.key[dimension], used: keyUsed };
    const tight = key.limit - key.used <= ws.limit - ws.used ? key : ws;
    return {
      limit: tight.limit,
      remaining: Math.max(0, tight.limit - tight.used),
      resetMs: tight.used > 0 ? resetMs : 0,
    };
  };
  const rateStatus = {
    requests: status("requests", v.wsRequests, v.keyRequests),
    tokens: status("tokens", v.wsTokens, v.keyTokens),
  };
  if (v.failed === 0) {
    const ticket = { workspaceId: request.workspaceId, keyId: request.keyId, bucket: v.bucket, tokens: request.tokens };
    if (v.leased !== 1 || !request.lease) return { allowed: true, status: rateStatus, ticket };
    const { requests, tokens } = request.lease;
    const lease = { requests, tokens, expiresInMs: (v.bucket + 1) * widthMs - v.now };
    return { allowed: true, status: rateStatus, ticket, lease };
  }
  const { scope, dimension } = checks[v.failed - 1] as { scope: Scope; dimension: Dimension };
  const used = [v.wsRequests, v.wsTokens, v.keyRequests, v.keyTokens][v.failed - 1] as number;
  return {
    allowed: false,
    status: rateStatus,
    denial: {
      scope,
      dimension,
      limit: request[scope][dimension],
      used,
      requested: dimension === "requests" ? 1 : request.tokens,
      retryAfterMs: v.waitMs < 0 ? undefined : Math.max(1, v.waitMs),
    },
  };
}
