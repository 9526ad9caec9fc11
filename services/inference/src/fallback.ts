import type { GatewayConfig, ModelConfig } from "@gw/config";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import {
  defaultRetryPolicy,
  retryDelay,
  UNOPENED_CREDENTIAL,
  unopenedCredentialError,
  type CallSignal,
  type GenAiMetrics,
  type RetryPolicy,
} from "@gw/service-kit";
import type { Dispatcher } from "undici";
import type { CircuitBreakers, CredentialBreaker } from "./circuit-breaker";
import { providerAdapters } from "./providers/registry";
import type { CallMeter } from "./usage/call-meter";
import { meteredAdapter } from "./usage/metered-adapter";
import type { ProviderAdapter, ProviderContext } from "./providers/types";
import { credentialRefusalStatus, ownCredentialRefused, ownCredentialSuspended } from "./upstream/errors";

export interface RouteAttempt {
  adapter: ProviderAdapter;
  ctx: ProviderContext;
  upstreamModel: string;
}

type Outcome<T> = { ok: true } & T;
type Failure = { ok: false; error: GatewayError };

export type { RetryPolicy };

export interface FallbackDeps {
  config: GatewayConfig;
  secrets: Record<string, string | undefined>;
  agent: Dispatcher;
  log: Logger;
  /** Skips deployments that keep failing; without it every route is always tried. */
  breakers?: CircuitBreakers;
  retry?: RetryPolicy;
  /** The caller went away: stop retrying. */
  signal?: CallSignal;
  /** The workspace's own credentials (enterprise), used instead of the platform's for their providers. */
  credentials?: Record<string, string>;
  /** Hears of every attempt and reads the answer's usage, for the usage record. */
  meter?: CallMeter;
  /** Counts retries and fallbacks per deployment. */
  genAi?: GenAiMetrics;
}

/**
 * Tries the model's routes in order. On each, a retryable failure (429, 502, 503, 504, a time-out,
 * an unreachable upstream) is retried up to the provider's `max_retries` times with backoff,
 * honouring the upstream's retry-after; then the next route is tried. A deployment whose circuit is
 * open is skipped. Any other failure, or the last route's, is the answer.
 *
 * A workspace's own credential is that workspace's business: the provider refusing it is a 424 at
 * once (no retry, no other route) counted on that credential's breaker alone, and its account's rate
 * limits are not held against the deployment either; the shared breaker hears only of the
 * deployment's own health.
 */
export async function withFallback<T>(
  model: ModelConfig,
  publicModel: string,
  deps: FallbackDeps,
  attempt: (route: RouteAttempt) => Promise<Outcome<T> | Failure> | undefined,
): Promise<Outcome<T> | Failure> {
  const retry = deps.retry ?? defaultRetryPolicy;
  if (deps.meter) deps.meter.requestModel = publicModel;
  let last: Failure | undefined;
  let skipped: { deployment: string; waitMs: number } | undefined;
  for (const [index, route] of model.routes.entries()) {
    const config = deps.config.providers[route.provider];
    const adapter = config ? providerAdapters[config.kind] : undefined;
    if (!config || !adapter) continue;
    const own = deps.credentials?.[route.provider];
    if (own === UNOPENED_CREDENTIAL) return { ok: false, error: unopenedCredentialError(route.provider) };
    const apiKey = own ?? deps.secrets[route.provider];
    if (config.api_key_env && !apiKey) {
      last = { ok: false, error: new GatewayError("provider_not_configured", `The provider for \`${publicModel}\` has no credential configured`) };
      continue;
    }
    const deployment = `${route.provider}/${route.model}`;
    const ownBreaker = own !== undefined ? deps.breakers?.ownCredential(deployment, own) : undefined;
    if (ownBreaker && !ownBreaker.allow()) return { ok: false, error: ownCredentialSuspended(route.provider, ownBreaker.waitMs()) };
    if (deps.breakers && !deps.breakers.allow(deployment)) {
      ownBreaker?.abandoned();
      const waitMs = deps.breakers.waitMs(deployment);
      if (!skipped || waitMs < skipped.waitMs) skipped = { deployment, waitMs };
      continue;
    }
    const routeAttempt = {
      adapter: deps.meter ? meteredAdapter(adapter) : adapter,
      ctx: { name: route.provider, config, apiKey, agent: deps.agent, meter: deps.meter },
      upstreamModel: route.model,
    };
    let result: Outcome<T> | Failure | undefined;
    for (let retries = 0; ; retries++) {
      result = await attempt(routeAttempt);
      if (own !== undefined && result && !result.ok) result = ownCredentialOutcome(result, route.provider);
      if (!result || result.ok || !result.error.retryable) break;
      // A call cut short because its caller went away is no sign of the provider's health.
      if (deps.signal?.aborted) break;
      // The workspace's own account being rate limited is not the deployment failing.
      if (own !== undefined && result.error.code === "upstream_rate_limited") deps.breakers?.abandoned(deployment);
      else deps.breakers?.failed(deployment);
      const delay = retries < config.max_retries ? retryDelay(result.error, retries, retry) : undefined;
      if (delay === undefined || (deps.breakers && !deps.breakers.allow(deployment))) break;
      deps.log.debug({ provider: route.provider, code: result.error.code, retry: retries + 1, delayMs: delay }, "retrying the route");
      deps.genAi?.retry(deployment);
      await retry.sleep(delay, deps.signal);
      if (deps.signal?.aborted) break;
    }
    if (!result) {
      deps.breakers?.abandoned(deployment);
      ownBreaker?.abandoned();
      continue; // this adapter cannot serve the route's operation
    }
    if (result.ok) {
      deps.breakers?.succeeded(deployment);
      ownBreaker?.succeeded();
      return result;
    }
    last = result;
    if (!result.error.retryable || deps.signal?.aborted) {
      deps.breakers?.abandoned(deployment);
      settleOwnBreaker(ownBreaker, result.error);
      return result;
    }
    ownBreaker?.abandoned();
    if (index < model.routes.length - 1) {
      deps.genAi?.fallback(deployment);
      deps.log.warn({ provider: route.provider, code: result.error.code, status: result.error.status }, "route failed; falling back");
    }
  }
  if (!last && skipped) {
    const seconds = Math.max(1, Math.ceil(skipped.waitMs / 1000));
    return {
      ok: false,
      error: new GatewayError(
        "upstream_unavailable",
        `\`${publicModel}\` is temporarily unavailable after repeated upstream failures; try again in ${seconds}s`,
        {
          headers: { "retry-after": String(seconds) },
        },
      ),
    };
  }
  // Built only when needed: an error captures a stack trace, and most requests succeed.
  return last ?? { ok: false, error: new GatewayError("provider_not_configured", `No provider can serve \`${publicModel}\``) };
}

/** A refusal of the workspace's own credential becomes its 424; any other failure stays as it is. */
function ownCredentialOutcome(failure: Failure, provider: string): Failure {
  const status = credentialRefusalStatus(failure.error);
  return status === undefined ? failure : { ok: false, error: ownCredentialRefused(provider, status) };
}

/** A refused own credential counts on its breaker; any other final failure says nothing of it. */
function settleOwnBreaker(breaker: CredentialBreaker | undefined, error: GatewayError): void {
  if (error.code === "provider_credential_refused") breaker?.failed();
  else breaker?.abandoned();
}
