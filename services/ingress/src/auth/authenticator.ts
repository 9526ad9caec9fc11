import type { Identity } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import type { IdentityStore, KeyPrincipal } from "../store/identity-store";
import { IdentityCache, type IdentityCacheOptions } from "./identity-cache";
import { hashKey, isWellFormedKey, readKey } from "./keys";

export interface Authenticated {
  principal: KeyPrincipal;
  identity: Identity;
}

/**
 * Turns the caller's headers into an identity, or a 401/403 GatewayError. Lookups go through the
 * cache; concurrent lookups of one key share a single query.
 */
export class Authenticator {
  readonly cache: IdentityCache;
  private readonly inflight = new Map<string, Promise<KeyPrincipal | undefined>>();
  private readonly identities = new WeakMap<KeyPrincipal, Identity>();

  constructor(
    private readonly store: IdentityStore,
    cacheOptions: IdentityCacheOptions,
    private readonly logger: Logger,
  ) {
    this.cache = new IdentityCache(cacheOptions);
  }

  async authenticate(headers: { authorization?: string; "x-api-key"?: string | string[] }): Promise<Authenticated> {
    const key = readKey(headers);
    if (!key) {
      throw new GatewayError("missing_api_key", "Missing API key: send it as `Authorization: Bearer <API_KEY>`");
    }
    if (!isWellFormedKey(key)) {
      throw new GatewayError("invalid_api_key", "Invalid API key: platform keys start with gw_live_");
    }
    const principal = await this.lookup(hashKey(key));
    if (!principal || principal.keyStatus === "revoked") {
      throw new GatewayError("invalid_api_key", "Invalid API key: the key is unknown or has been revoked");
    }
    if (principal.keyStatus === "disabled") throw new GatewayError("key_disabled", "This API key is disabled");
    if (principal.workspace.subscription !== "active") {
      throw new GatewayError("subscription_inactive", "The workspace has no active subscription");
    }
    return { principal, identity: this.identityFor(principal) };
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
    const cached = this.cache.getFresh(hash);
    if (cached) return cached.principal;
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
      for (;;) {
        const epoch = this.cache.epoch;
        const principal = await this.store.findByHash(hash);
        // A change was applied while we read: our row may predate it, so read again.
        if (epoch !== this.cache.epoch) continue;
        this.cache.set(hash, principal);
        return principal;
      }
    } catch (err) {
      const stale = this.cache.getStale(hash);
      if (stale) {
        this.logger.warn({ err: (err as Error).message }, "identity store unreachable; serving a cached key");
        return stale;
      }
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
