import type { Identity } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import type { IdentityStore, KeyPrincipal } from "../store/identity-store";
import { FailureGuard, type FailureGuardOptions } from "./failure-guard";
import { IdentityCache, type IdentityCacheOptions } from "./identity-cache";
import { hashKey, isWellFormedKey, readKey } from "./keys";
import { LookupGate, type LookupGateOptions } from "./lookup-gate";

export interface Authenticated {
  principal: KeyPrincipal;
  identity: Identity;
}

/** What unknown keys may cost: store lookups at once, and failed attempts per client address. */
export interface AuthenticatorLimits {
  lookups: LookupGateOptions;
  failures: Omit<FailureGuardOptions, "now">;
}

export const defaultAuthenticatorLimits: AuthenticatorLimits = {
  // The pool has 10 connections by default: uncached keys never hold more than 4 of them.
  lookups: { concurrency: 4, maxQueue: 256, maxWaitMs: 2_000 },
  failures: { maxFailures: 60, windowMs: 60_000, maxAddresses: 50_000 },
};

/**
 * Turns the caller's headers into an identity, or a 401/403 GatewayError. A cached known key is
 * answered at once; anything else first passes the client address's failure budget (429 when it
 * is spent), then the short-lived cache of unknown keys, then a bounded number of concurrent store
 * lookups (503 when they are all taken for too long). Concurrent lookups of one key share a query.
 */
export class Authenticator {
  readonly cache: IdentityCache;
  readonly lookups: LookupGate;
  readonly failures: FailureGuard;
  private readonly inflight = new Map<string, Promise<KeyPrincipal | undefined>>();
  private readonly identities = new WeakMap<KeyPrincipal, Identity>();

  constructor(
    private readonly store: IdentityStore,
    cacheOptions: IdentityCacheOptions,
    private readonly logger: Logger,
    limits: AuthenticatorLimits = defaultAuthenticatorLimits,
  ) {
    this.cache = new IdentityCache(cacheOptions);
    this.lookups = new LookupGate(limits.lookups);
    this.failures = new FailureGuard({ ...limits.failures, now: cacheOptions.now });
  }

  /** `clientAddress` is the caller's IP as the front door sees it (after trusted proxies). */
  async authenticate(headers: { authorization?: string; "x-api-key"?: string | string[] }, clientAddress: string): Promise<Authenticated> {
    const key = readKey(headers);
    if (key !== undefined && isWellFormedKey(key)) {
      const hash = hashKey(key);
      // The hot path: a known key never touches the address budget.
      const known = this.cache.getKnown(hash);
      if (known) return this.admit(known, clientAddress);
      // A key this replica served recently may be re-read even from an address over its budget:
      // its cache entry lapses every TTL, and a shared NAT must not lock out a valid customer.
      if (!this.cache.getStale(hash)) this.refuseIfBlocked(clientAddress);
      return this.admit(await this.lookup(hash), clientAddress);
    }
    this.refuseIfBlocked(clientAddress);
    this.failures.record(clientAddress);
    if (!key) throw new GatewayError("missing_api_key", "Missing API key: send it as `Authorization: Bearer <API_KEY>`");
    throw new GatewayError("invalid_api_key", "Invalid API key: platform keys start with gw_live_");
  }

  private admit(principal: KeyPrincipal | undefined, clientAddress: string): Authenticated {
    if (!principal || principal.keyStatus === "revoked") {
      this.failures.record(clientAddress);
      throw new GatewayError("invalid_api_key", "Invalid API key: the key is unknown or has been revoked");
    }
    if (principal.keyStatus === "disabled") throw new GatewayError("key_disabled", "This API key is disabled");
    if (principal.workspace.subscription !== "active") {
      throw new GatewayError("subscription_inactive", "The workspace has no active subscription");
    }
    return { principal, identity: this.identityFor(principal) };
  }

  private refuseIfBlocked(clientAddress: string): void {
    const waitMs = this.failures.blockedFor(clientAddress);
    if (waitMs <= 0) return;
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    throw new GatewayError("too_many_auth_failures", `Too many failed authentication attempts from this address; please try again in ${seconds}s`, {
      headers: { "retry-after": String(seconds) },
    });
  }

  /** One identity object per cached principal, so its signed header can be reused too. */
  private identityFor(principal: KeyPrincipal): Identity {
    let identity = this.identities.get(principal);
    if (!identity) {
      identity = identityOf(principal);
      this.identities.set(principal, identity);
    }
    return identity;
  }

  private async lookup(hash: string): Promise<KeyPrincipal | undefined> {
    if (this.cache.isKnownUnknown(hash)) return undefined;
    // Lookups started before an invalidation are not shared with callers that come after it.
    const slot = `${this.cache.epoch}:${hash}`;
    let pending = this.inflight.get(slot);
    if (!pending) {
      pending = this.fetch(hash).finally(() => this.inflight.delete(slot));
      this.inflight.set(slot, pending);
    }
    return pending;
  }

  private async fetch(hash: string): Promise<KeyPrincipal | undefined> {
    try {
      return await this.lookups.run(async () => {
        for (;;) {
          const epoch = this.cache.epoch;
          const principal = await this.store.findByHash(hash);
          // A change was applied while we read: our row may predate it, so read again.
          if (epoch !== this.cache.epoch) continue;
          this.cache.set(hash, principal);
          return principal;
        }
      });
    } catch (err) {
      // Busy (the lookup gate refused) or unreachable: a key known a while ago is still served.
      const busy = err instanceof GatewayError;
      const stale = this.cache.getStale(hash);
      if (stale) {
        if (!busy) this.logger.warn({ err: (err as Error).message }, "identity store unreachable; serving a cached key");
        return stale;
      }
      if (busy) throw err;
      throw new GatewayError("upstream_unavailable", "Authentication is temporarily unavailable", { cause: err });
    }
  }
}

export function identityOf(p: KeyPrincipal): Identity {
  const wsTools = p.workspace.tools;
  return {
    workspace_id: p.workspace.id,
    key_id: p.keyId,
    plan: p.workspace.plan,
    models: p.keyModels ? [p.workspace.models, p.keyModels] : [p.workspace.models],
    tools: p.keyTools ? wsTools.filter((t) => p.keyTools?.includes(t)) : wsTools,
  };
}
