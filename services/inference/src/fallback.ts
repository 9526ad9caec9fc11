import type { GatewayConfig, ModelConfig } from "@gw/config";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import type { Dispatcher } from "undici";
import { providerAdapters } from "./providers/registry";
import type { ProviderAdapter, ProviderContext } from "./providers/types";

export interface RouteAttempt {
  adapter: ProviderAdapter;
  ctx: ProviderContext;
  upstreamModel: string;
}

type Outcome<T> = { ok: true } & T;
type Failure = { ok: false; error: GatewayError };

/**
 * Tries the model's routes in order. A retryable failure (429, 5xx, timeout, unreachable, missing
 * credential) moves on to the next route; any other failure, or the last route's, is the answer.
 */
export async function withFallback<T>(
  model: ModelConfig,
  publicModel: string,
  deps: { config: GatewayConfig; secrets: Record<string, string | undefined>; agent: Dispatcher; log: Logger },
  attempt: (route: RouteAttempt) => Promise<Outcome<T> | Failure> | undefined,
): Promise<Outcome<T> | Failure> {
  let last: Failure | undefined;
  for (const [index, route] of model.routes.entries()) {
    const config = deps.config.providers[route.provider];
    const adapter = config ? providerAdapters[config.kind] : undefined;
    if (!config || !adapter) continue;
    const apiKey = deps.secrets[route.provider];
    let result: Outcome<T> | Failure | undefined;
    if (config.api_key_env && !apiKey) {
      result = {
        ok: false,
        error: new GatewayError("provider_not_configured", `The provider for \`${publicModel}\` has no credential configured`),
      };
    } else {
      result = await attempt({ adapter, ctx: { name: route.provider, config, apiKey, agent: deps.agent }, upstreamModel: route.model });
    }
    if (!result) continue; // this adapter cannot serve the route's operation
    if (result.ok) return result;
    last = result;
    if (!result.error.retryable) return result;
    if (index < model.routes.length - 1) {
      deps.log.warn({ provider: route.provider, code: result.error.code, status: result.error.status }, "route failed; falling back");
    }
  }
  // Built only when needed: an error captures a stack trace, and most requests succeed.
  return last ?? { ok: false, error: new GatewayError("provider_not_configured", `No provider can serve \`${publicModel}\``) };
}
