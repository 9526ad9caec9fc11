import { createHash } from "node:crypto";

/**
 * Per-deployment circuit breakers (a deployment is a provider and an upstream model). A deployment
 * that fails `threshold` times in a row is skipped for `cooldownMs`; then one call is let through
 * (half-open): its success closes the circuit, its failure opens it for another cool-down.
 */
export interface BreakerOptions {
  threshold: number;
  cooldownMs: number;
  now?: () => number;
  /** Most credential breakers kept (see `ownCredentials`); past it the oldest is forgotten. Default 10,000. */
  maxOwnCredentials?: number;
  /** Hears a deployment's breaker change state (for metrics); workspace credentials' breakers are not told. */
  onState?: (deployment: string, state: BreakerState) => void;
}

export type BreakerState = "closed" | "open" | "half_open";

interface State {
  failures: number;
  openUntil: number;
  /** A half-open trial is in flight: other calls keep skipping the deployment until it ends. */
  probing: boolean;
}

/** Breaker states by key, at most `maxEntries` of them (the oldest is dropped first). */
class KeyedBreakers {
  private readonly states = new Map<string, State>();

  constructor(
    private readonly options: { threshold: number; cooldownMs: number; maxEntries: number },
    private readonly now: () => number,
    private readonly onState: (key: string, state: BreakerState) => void = () => undefined,
  ) {}

  get size(): number {
    return this.states.size;
  }

  allow(key: string): boolean {
    const state = this.states.get(key);
    if (!state || state.openUntil === 0) return true;
    if (this.now() < state.openUntil || state.probing) return false;
    state.probing = true;
    this.onState(key, "half_open");
    return true;
  }

  waitMs(key: string): number {
    const state = this.states.get(key);
    return state && state.openUntil > 0 ? Math.max(0, state.openUntil - this.now()) : 0;
  }

  succeeded(key: string): void {
    const state = this.states.get(key);
    if (!state) return;
    this.states.delete(key);
    if (state.openUntil > 0) this.onState(key, "closed");
  }

  abandoned(key: string): void {
    const state = this.states.get(key);
    if (state) state.probing = false;
  }

  failed(key: string): void {
    let state = this.states.get(key);
    if (!state) {
      if (this.states.size >= this.options.maxEntries) this.states.delete(this.states.keys().next().value as string);
      state = { failures: 0, openUntil: 0, probing: false };
      this.states.set(key, state);
    }
    state.failures += 1;
    if (state.probing || state.failures >= this.options.threshold) {
      state.openUntil = this.now() + this.options.cooldownMs;
      this.onState(key, "open");
    }
    state.probing = false;
  }
}

export class CircuitBreakers {
  private readonly deployments: KeyedBreakers;
  /**
   * Breakers of workspaces' own credentials, by deployment and credential: a provider refusing one
   * workspace's key says nothing of the deployment's health, so it opens this one only, never the
   * deployment's breaker that every tenant shares. Keyed by a digest, never the key itself, which
   * also gives a rotated key a fresh start; bounded, since workspaces are many.
   */
  private readonly ownCredentials: KeyedBreakers;

  constructor(options: BreakerOptions) {
    const now = options.now ?? Date.now;
    this.deployments = new KeyedBreakers({ ...options, maxEntries: Number.POSITIVE_INFINITY }, now, options.onState);
    this.ownCredentials = new KeyedBreakers({ ...options, maxEntries: options.maxOwnCredentials ?? 10_000 }, now);
  }

  /** Whether a call may go to the deployment now; a true answer after a cool-down is the trial. */
  allow(deployment: string): boolean {
    return this.deployments.allow(deployment);
  }

  /** Milliseconds until the deployment may be tried again (0 when it may be tried now). */
  waitMs(deployment: string): number {
    return this.deployments.waitMs(deployment);
  }

  succeeded(deployment: string): void {
    this.deployments.succeeded(deployment);
  }

  /**
   * A call that ended saying nothing about the deployment's health (its caller went away, or the
   * provider refused the request itself): counts neither way, but a trial it was lets the next call try.
   */
  abandoned(deployment: string): void {
    this.deployments.abandoned(deployment);
  }

  failed(deployment: string): void {
    this.deployments.failed(deployment);
  }

  /** The breaker of one workspace credential on one deployment (see `ownCredentials`). */
  ownCredential(deployment: string, credential: string): CredentialBreaker {
    return new CredentialBreaker(this.ownCredentials, deployment, credential);
  }
}

/**
 * One workspace credential's breaker on one deployment. While no workspace credential has failed
 * (the usual case) every check is answered without computing the digest.
 */
export class CredentialBreaker {
  private key: string | undefined;

  constructor(
    private readonly states: KeyedBreakers,
    private readonly deployment: string,
    private readonly credential: string,
  ) {}

  private id(): string {
    this.key ??= `${this.deployment}\n${createHash("sha256").update(this.credential).digest("base64url")}`;
    return this.key;
  }

  allow(): boolean {
    return this.states.size === 0 || this.states.allow(this.id());
  }

  waitMs(): number {
    return this.states.size === 0 ? 0 : this.states.waitMs(this.id());
  }

  succeeded(): void {
    if (this.states.size > 0) this.states.succeeded(this.id());
  }

  abandoned(): void {
    if (this.states.size > 0) this.states.abandoned(this.id());
  }

  failed(): void {
    this.states.failed(this.id());
  }
}
