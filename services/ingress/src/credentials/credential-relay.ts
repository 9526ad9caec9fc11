import { internalHeaders, providerCredentialSealing } from "@gw/contracts";
import { redactSecrets, type Logger } from "@gw/logger";
import { credentialsTransitPurpose, Sealer, UNOPENED_CREDENTIAL } from "@gw/service-kit";
import type { KeyPrincipal } from "../store/identity-store";

/** The context a credential is sealed under at rest: it cannot be moved to another workspace. */
export const credentialContext = providerCredentialSealing.context;

/**
 * Turns an enterprise workspace's sealed credentials into the `x-gw-credentials` header for the
 * other services: opened with the master key, sealed again under the internal secret for this
 * workspace only. Computed once per cached principal. Other plans' credentials are never sent.
 */
export class CredentialRelay {
  private readonly headers = new WeakMap<KeyPrincipal, string | null>();
  private readonly transit: Sealer;
  private warned = false;

  constructor(
    private readonly atRest: Sealer | undefined,
    internalSecret: string,
    private readonly logger: Logger,
  ) {
    this.transit = new Sealer(internalSecret, credentialsTransitPurpose);
  }

  readonly name = internalHeaders.credentials;

  headerFor(principal: KeyPrincipal): string | undefined {
    const cached = this.headers.get(principal);
    if (cached !== undefined) return cached ?? undefined;
    const header = this.build(principal);
    this.headers.set(principal, header ?? null);
    return header;
  }

  private build(principal: KeyPrincipal): string | undefined {
    const { workspace, sealedCredentials } = principal;
    const providers = Object.keys(sealedCredentials);
    if (workspace.plan !== "enterprise" || providers.length === 0) return undefined;
    if (!this.atRest && !this.warned) {
      this.logger.warn("workspaces have provider credentials but GATEWAY_MASTER_KEY is not set; their calls to those providers fail");
      this.warned = true;
    }
    const open: Record<string, string> = {};
    for (const provider of providers) {
      const value = this.atRest?.open(sealedCredentials[provider] as string, credentialContext(workspace.id, provider));
      if (value === undefined && this.atRest) {
        this.logger.warn({ workspace: workspace.id, provider }, "a stored provider credential does not open with the master key; its calls fail");
      }
      // Never the platform's credential in its place: the call fails, naming the provider.
      open[provider] = value ?? UNOPENED_CREDENTIAL;
    }
    // From now on this process's log lines censor the workspace's keys as they do the platform's.
    redactSecrets(this.logger, Object.values(open));
    return this.transit.seal(JSON.stringify(open), workspace.id);
  }
}
