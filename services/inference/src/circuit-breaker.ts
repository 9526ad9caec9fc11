/**
 * Per-deployment circuit breakers (a deployment is a provider and an upstream model). A deployment
 * that fails `threshold` times in a row is skipped for `cooldownMs`; then one call is let through
 * (half-open): its success closes the circuit, its failure opens it for another cool-down.
 */
export interface BreakerOptions {
  threshold: number;
  cooldownMs: number;
  now?: () => number;
}

interface State {
  failures: number;
  openUntil: number;
  /** A half-open trial is in flight: other calls keep skipping the deployment until it ends. */
  probing: boolean;
}

export class CircuitBreakers {
  private readonly states = new Map<string, State>();
  private readonly now: () => number;

  constructor(private readonly options: BreakerOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Whether a call may go to the deployment now; a true answer after a cool-down is the trial. */
  allow(deployment: string): boolean {
    const state = this.states.get(deployment);
    if (!state || state.openUntil === 0) return true;
    if (this.now() < state.openUntil || state.probing) return false;
    state.probing = true;
    return true;
  }

  /** Milliseconds until the deployment may be tried again (0 when it may be tried now). */
  waitMs(deployment: string): number {
    const state = this.states.get(deployment);
    return state && state.openUntil > 0 ? Math.max(0, state.openUntil - this.now()) : 0;
  }

  succeeded(deployment: string): void {
    this.states.delete(deployment);
  }

  /**
   * A call that ended saying nothing about the deployment's health (its caller went away, or the
   * provider refused the request itself): counts neither way, but a trial it was lets the next call try.
   */
  abandoned(deployment: string): void {
    const state = this.states.get(deployment);
    if (state) state.probing = false;
  }

  failed(deployment: string): void {
    const state = this.states.get(deployment) ?? { failures: 0, openUntil: 0, probing: false };
    state.failures += 1;
    if (state.probing || state.failures >= this.options.threshold) state.openUntil = this.now() + this.options.cooldownMs;
    state.probing = false;
    this.states.set(deployment, state);
  }
}
