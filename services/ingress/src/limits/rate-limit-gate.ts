import type { Response } from "express";
import type { PlanLimitsTable } from "@gw/config";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { addCounter, type ServiceMetrics } from "@gw/service-kit";
import type { KeyPrincipal } from "../store/identity-store";
import { effectiveWorkspaceLimits } from "./plan-limits";
import type { Admission, Denial, Limit, Limiter, RateStatus, Ticket } from "./types";

export type FailureMode = "open" | "closed";

const WARN_EVERY_MS = 10_000;

/**
 * Ingress's use of the limiter: limits from the plan and the overrides, fail-open (or closed) when
 * the limiter's store is unreachable, and the metrics and logs that say so.
 */
export class RateLimitGate {
  private readonly unavailable: ReturnType<typeof addCounter<"mode">>;
  private readonly denied: ReturnType<typeof addCounter<"scope" | "dimension">>;
  private lastWarning = 0;

  constructor(
    readonly limiter: Limiter,
    private readonly plans: PlanLimitsTable,
    private readonly failureMode: FailureMode,
    private readonly logger: Logger,
    metrics: ServiceMetrics,
  ) {
    this.unavailable = addCounter(
      metrics,
      "gw_ratelimit_unavailable_total",
      "Requests whose rate limit could not be checked because the limiter's store was unreachable, by failure mode",
      ["mode"],
    );
    this.denied = addCounter(metrics, "gw_ratelimit_denied_total", "Requests refused with 429 by the gateway's limits, by scope and dimension", [
      "scope",
      "dimension",
    ]);
  }

  /** The workspace's limits, and the key's: its own overrides, never wider than the workspace's. */
  limitsFor(principal: KeyPrincipal): { workspace: Limit; key: Limit } {
    const ws = effectiveWorkspaceLimits(this.plans, principal.workspace);
    const workspace = { requests: ws.requests_per_minute, tokens: ws.tokens_per_minute };
    const own = principal.keyLimits;
    const key = {
      requests: Math.min(own.requests_per_minute ?? workspace.requests, workspace.requests),
      tokens: Math.min(own.tokens_per_minute ?? workspace.tokens, workspace.tokens),
    };
    return { workspace, key };
  }

  /** The admission, or undefined when the limiter is unreachable and limits fail open. */
  async admit(principal: KeyPrincipal, tokens: number): Promise<Admission | undefined> {
    const limits = this.limitsFor(principal);
    try {
      const admission = await this.limiter.admit({
        workspaceId: principal.workspace.id,
        keyId: principal.keyId,
        ...limits,
        tokens,
      });
      if (!admission.allowed) this.denied.inc({ scope: admission.denial.scope, dimension: admission.denial.dimension });
      return admission;
    } catch (err) {
      this.unavailable.inc({ mode: this.failureMode });
      this.warn(err);
      if (this.failureMode === "open") return undefined;
      throw new GatewayError("upstream_unavailable", "Rate limiting is temporarily unavailable; try again", { cause: err });
    }
  }

  /** Settles a reservation in the background: the answer has already gone out. */
  settle(ticket: Ticket, actualTokens: number): void {
    this.limiter.settle(ticket, actualTokens).catch((err: unknown) => this.warn(err));
  }

  private warn(err: unknown): void {
    const now = Date.now();
    if (now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.logger.warn(
      { err: (err as Error).message, failureMode: this.failureMode },
      this.failureMode === "open" ? "rate limiter unreachable; serving without limits" : "rate limiter unreachable; refusing requests",
    );
  }
}

/** The six OpenAI-style headers, from the scope with the least room left in each dimension. */
export function setRateHeaders(res: Response, status: RateStatus): void {
  res.setHeader("x-ratelimit-limit-requests", String(status.requests.limit));
  res.setHeader("x-ratelimit-remaining-requests", String(status.requests.remaining));
  res.setHeader("x-ratelimit-reset-requests", formatDuration(status.requests.resetMs));
  res.setHeader("x-ratelimit-limit-tokens", String(status.tokens.limit));
  res.setHeader("x-ratelimit-remaining-tokens", String(status.tokens.remaining));
  res.setHeader("x-ratelimit-reset-tokens", formatDuration(status.tokens.resetMs));
}

/**
 * The 429 for a denial, in OpenAI's wording and `type` (requests or tokens). `retry-after` (whole
 * seconds) and `retry-after-ms` (which both official SDKs prefer) say when it will fit; a request
 * that can never fit says `x-should-retry: false`, so the SDKs do not retry it in vain.
 */
export function rateLimitError(denial: Denial, windowMs: number): GatewayError {
  const unit = denial.dimension === "requests" ? "requests per minute (RPM)" : "tokens per minute (TPM)";
  const where = denial.scope === "key" ? "on this API key" : "on this workspace";
  const per = windowMs === 60_000 ? unit : `${denial.dimension} per ${formatDuration(windowMs)}`;
  if (denial.retryAfterMs === undefined) {
    return new GatewayError(
      "rate_limit_exceeded",
      `Request too large for ${per} ${where}: limit ${denial.limit}, requested ${denial.requested}. Lower max_tokens or the size of the input.`,
      { type: denial.dimension, headers: { "x-should-retry": "false" } },
    );
  }
  const seconds = denial.retryAfterMs / 1000;
  return new GatewayError(
    "rate_limit_exceeded",
    `Rate limit reached for ${per} ${where}: limit ${denial.limit}, used ${denial.used}, requested ${denial.requested}. ` +
      `Please try again in ${formatDuration(denial.retryAfterMs)}.`,
    {
      type: denial.dimension,
      headers: { "retry-after": String(Math.ceil(seconds)), "retry-after-ms": String(Math.ceil(denial.retryAfterMs)) },
    },
  );
}

/** OpenAI's duration style: "20ms", "1s", "8.64s", "6m0s", "2m59.56s". */
export function formatDuration(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 1000) return `${whole}ms`;
  const minutes = Math.floor(whole / 60_000);
  // A whole number of milliseconds over 1000 prints with at most three decimals, trailing zeros dropped.
  const seconds = (whole % 60_000) / 1000;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}
