import { ConfigError, type GatewayConfig, type ProviderKind } from "@gw/config";
import type { ToolName } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { UNOPENED_CREDENTIAL, unopenedCredentialError } from "@gw/service-kit";
import type { ToolOutcome } from "./upstream/call";

/** Where one tool's calls go: the provider named after the tool in the config, and its credential. */
export interface ToolUpstream {
  tool: ToolName;
  baseUrl: string;
  /** The gateway's credential (or an enterprise workspace's own); never the caller's platform key. */
  apiKey: string;
  timeoutMs: number;
  maxRetries: number;
  /** The provider's extra headers from the config. */
  headers: Record<string, string>;
  /** Set when `apiKey` is the workspace's own credential, whose failures are that workspace's (credentialAware). */
  ownCredential?: true;
}

/** The provider kind each tool speaks (docs/configuration.md: found by the names webtool and serptool). */
export const toolProviderKinds: Record<ToolName, ProviderKind> = { webtool: "tavily", serptool: "serpapi" };

/**
 * Refuses to start on a tool provider of the wrong kind (a `webtool` of kind openai would send
 * search bodies to a model API), naming the key as every configuration error does.
 */
export function checkToolProviders(gateway: GatewayConfig): void {
  for (const [tool, kind] of Object.entries(toolProviderKinds)) {
    const provider = gateway.providers[tool];
    if (provider && provider.kind !== kind) {
      throw new ConfigError(`invalid configuration: providers.${tool}.kind: the ${tool} tool needs a provider of kind ${kind}, not ${provider.kind}`);
    }
  }
}

/**
 * The upstream for `tool`. No provider of that name in the config: 404, the tool does not exist on
 * this gateway (not retryable). A provider without its credential in the environment: 503
 * `provider_not_configured`, as for models (the operator has to set it).
 */
export function resolveToolUpstream(
  gateway: GatewayConfig,
  secrets: Record<string, string | undefined>,
  tool: ToolName,
  /** An enterprise workspace's own provider credentials (`res.locals.credentials`), used first. */
  credentials?: Record<string, string>,
): ToolOutcome<ToolUpstream> {
  const provider = gateway.providers[tool];
  if (!provider || provider.kind !== toolProviderKinds[tool]) {
    return { ok: false, error: new GatewayError("not_found", `The tool \`${tool}\` is not configured on this gateway`) };
  }
  const own = credentials?.[tool];
  if (own === UNOPENED_CREDENTIAL) return { ok: false, error: unopenedCredentialError(tool) };
  const apiKey = own ?? secrets[tool];
  if (!apiKey) {
    return { ok: false, error: new GatewayError("provider_not_configured", `The tool \`${tool}\` has no provider credential configured`) };
  }
  return {
    ok: true,
    value: {
      tool,
      baseUrl: provider.base_url,
      apiKey,
      timeoutMs: provider.timeout_ms,
      maxRetries: provider.max_retries,
      headers: provider.headers ?? {},
      ...(own === undefined ? {} : { ownCredential: true as const }),
    },
  };
}

/**
 * A provider failure as the caller should see it, given whose credential was sent. With a workspace's
 * own credential, the provider refusing it (a 401 or 403 that the tool's error mapping took for a
 * credential refusal, not for the caller's request) is a 424 naming the tool: only the workspace can
 * fix it, so it is not retried, and it is not the 401 an SDK would take for its platform key being
 * wrong. Its account's quota running out is the workspace's too, not the gateway operator's.
 */
export function credentialAware(upstream: ToolUpstream, status: number, error: GatewayError): GatewayError {
  if (!upstream.ownCredential) return error;
  const name = `\`${upstream.tool}\``;
  if ((status === 401 || status === 403) && error.code === "upstream_error") {
    return new GatewayError(
      "provider_credential_refused",
      `The provider ${name} refused this workspace's own credential (HTTP ${status}); the request was not retried. Update the credential this workspace registered for ${name}.`,
    );
  }
  if (error.type === "insufficient_quota") {
    return new GatewayError("upstream_rate_limited", `The provider ${name} says the quota of this workspace's own credential is exhausted`, {
      type: error.type,
      headers: error.headers,
      retryable: false,
    });
  }
  return error;
}
