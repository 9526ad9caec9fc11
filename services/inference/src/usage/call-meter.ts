import type { Response } from "express";
import { formatOutcomeText, internalHeaders, type CallOutcome, type MessagesUsage, type TokenUsage, type UsageUnits, wholeMicros } from "@gw/contracts";

/**
 * What one call learned on its way through the fallback loop and the provider's answer: which
 * deployment answered, how many attempts it took, how long the upstream took, and the usage the
 * provider reported in its own terms (read before any translation to the caller's format, which
 * would fold Anthropic's cache writes into the prompt count). Ingress writes it into the request's
 * usage record; the async job worker into the job's.
 */
export class CallMeter {
  /** The public model asked for (config names only), for the metrics' labels. */
  requestModel: string | undefined;
  /** Shown in the outcome only where ingress cannot read the model itself (a multipart form). */
  showModel = false;
  /** The route it was made for, as mounted (the GenAI metrics' operation), so the answer's end need not read the request's path. */
  route: string | undefined;
  private provider: string | undefined;
  private upstreamModel: string | undefined;
  private attempts = 0;
  private upstreamMs = 0;
  private attemptStarted = 0;
  private ttftMs: number | undefined;
  private usage: TokenUsage | undefined;
  private units: UsageUnits | undefined;
  private readonly started = performance.now();

  attemptStart(provider: string, upstreamModel: string): void {
    this.provider = provider;
    this.upstreamModel = upstreamModel;
    this.attempts++;
    this.attemptStarted = performance.now();
  }

  /** The attempt's answer is in (a whole JSON body, or a stream's headers). */
  attemptEnd(): void {
    if (this.attemptStarted === 0) return;
    this.upstreamMs += performance.now() - this.attemptStarted;
    this.attemptStarted = 0;
  }

  /** The first event of a stream arrived; its remaining time counts as upstream time too. */
  firstEvent(): void {
    if (this.ttftMs === undefined) this.ttftMs = performance.now() - this.started;
  }

  /** A stream ended: the upstream was busy with it until now. */
  streamEnd(streamStarted: number): void {
    this.upstreamMs += performance.now() - streamStarted;
  }

  /** Usage as reported; a later report of a stream (Anthropic's `message_delta`) updates the parts it names. */
  tokens(usage: TokenUsage): void {
    // Field by field rather than a loop over the names: each lookup then has one shape to meet.
    this.usage ??= {};
    const into = this.usage;
    if (isCount(usage.input_tokens)) into.input_tokens = usage.input_tokens;
    if (isCount(usage.output_tokens)) into.output_tokens = usage.output_tokens;
    if (isCount(usage.cached_input_tokens)) into.cached_input_tokens = usage.cached_input_tokens;
    if (isCount(usage.cache_write_tokens)) into.cache_write_tokens = usage.cache_write_tokens;
    if (isCount(usage.reasoning_tokens)) into.reasoning_tokens = usage.reasoning_tokens;
  }

  unit(name: keyof UsageUnits, value: number): void {
    if (!Number.isFinite(value) || value < 0) return;
    this.units = { ...this.units, [name]: value };
  }

  /** The deployment's provider that answered last, or was tried last. */
  get calledProvider(): string | undefined {
    return this.provider;
  }

  get calledUpstreamModel(): string | undefined {
    return this.upstreamModel;
  }

  /** Time to the first event of a stream, unrounded. */
  get firstEventMs(): number | undefined {
    return this.ttftMs;
  }

  /** Usage as reported so far (possibly with no count in it). */
  get reportedUsage(): Readonly<TokenUsage> | undefined {
    return this.usage;
  }

  get reportedUnits(): Readonly<UsageUnits> | undefined {
    return this.units;
  }

  outcome(): CallOutcome {
    const out: CallOutcome = {};
    if (this.showModel && this.requestModel !== undefined) out.model = this.requestModel;
    if (this.provider !== undefined) out.provider = this.provider;
    if (this.upstreamModel !== undefined) out.upstream_model = this.upstreamModel;
    if (this.attempts > 0) out.attempts = this.attempts;
    if (this.attempts > 0) out.upstream_ms = round(this.upstreamMs);
    if (this.ttftMs !== undefined) out.ttft_ms = round(this.ttftMs);
    const usage = this.usage;
    if (
      usage &&
      (usage.input_tokens !== undefined ||
        usage.output_tokens !== undefined ||
        usage.cached_input_tokens !== undefined ||
        usage.cache_write_tokens !== undefined ||
        usage.reasoning_tokens !== undefined)
    ) {
      out.usage = usage;
    }
    if (this.units) out.units = this.units;
    return out;
  }

  /**
   * `formatCallOutcome(this.outcome(), totalTokens)`, written from the fields: the header goes on
   * every answer, and the outcome object and its rounding were most of what it cost (bench/README.md).
   */
  outcomeText(totalTokens?: number): string {
    const called = this.attempts > 0;
    return formatOutcomeText(
      this.showModel ? this.requestModel : undefined,
      this.provider,
      this.upstreamModel,
      called ? this.attempts : undefined,
      called ? wholeMicros(this.upstreamMs) : undefined,
      this.ttftMs === undefined ? undefined : wholeMicros(this.ttftMs),
      this.usage,
      this.units,
      totalTokens,
    );
  }
}

function round(ms: number): number {
  return wholeMicros(ms) / 1000;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

interface OpenAIUsageLike {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

/** OpenAI's usage: `prompt_tokens` already counts the cached part, `completion_tokens` the reasoning. */
export function fromOpenAIUsage(u: OpenAIUsageLike): TokenUsage {
  return {
    input_tokens: u.prompt_tokens ?? undefined,
    output_tokens: u.completion_tokens ?? undefined,
    cached_input_tokens: u.prompt_tokens_details?.cached_tokens ?? undefined,
    reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? undefined,
  };
}

/**
 * Anthropic's usage: `input_tokens` is only the uncached part, so the recorded input is the sum of
 * the three counts it reports, each of which is also kept as it came.
 */
export function fromAnthropicUsage(u: Partial<MessagesUsage>): TokenUsage {
  const read = u.cache_read_input_tokens ?? undefined;
  const write = u.cache_creation_input_tokens ?? undefined;
  const input = typeof u.input_tokens === "number" ? u.input_tokens + (read ?? 0) + (write ?? 0) : undefined;
  return { input_tokens: input, output_tokens: u.output_tokens ?? undefined, cached_input_tokens: read, cache_write_tokens: write };
}

declare global {
  namespace Express {
    interface Locals {
      /** The call's usage meter (a plain property: a WeakMap keyed by the response cost more). */
      callMeter?: CallMeter;
    }
  }
}

/** The call's meter, if it made one (the GenAI metrics read it once the call has ended). */
export function meterFor(res: Response): CallMeter | undefined {
  return res.locals.callMeter;
}

/** The call's meter for the route mounted at `route`, made on first use. */
export function meterOf(res: Response, route: string): CallMeter {
  let meter = res.locals.callMeter;
  if (!meter) {
    meter = new CallMeter();
    meter.route = route;
    res.locals.callMeter = meter;
  }
  return meter;
}

/**
 * Puts the outcome on a JSON or error answer, before its headers leave, with the answer's total
 * tokens for the token limits when known; false when the call made no meter (the total then needs
 * a header of its own).
 */
export function setOutcomeHeader(res: Response, totalTokens?: number): boolean {
  const meter = res.locals.callMeter;
  if (!meter) return false;
  if (!res.headersSent) res.setHeader(internalHeaders.outcome, meter.outcomeText(totalTokens));
  return true;
}

/** A stream's outcome goes in a trailer (announced by startSse): only its end knows the usage. */
export function outcomeTrailer(res: Response, totalTokens?: number): Record<string, string> {
  const meter = res.locals.callMeter;
  return meter ? { [internalHeaders.outcome]: meter.outcomeText(totalTokens) } : {};
}
