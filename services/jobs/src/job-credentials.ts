import { providerCredentialSealing } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { credentialsTransitPurpose, CredentialsReader, Sealer } from "@gw/service-kit";

/**
 * A job's own provider credentials as stored: by provider, the credential sealed at rest and the
 * version of the change that set it (0 for those the job arrived with); a removal keeps only its
 * version, so that an older change arriving late cannot bring the credential back.
 */
export type StoredCredentials = Record<string, { sealed?: string; version: number }>;

/**
 * An enterprise workspace's own provider credentials on their way through an async job. At rest they
 * are sealed under GATEWAY_MASTER_KEY exactly as ingress stores them (so the value a
 * `credentials.changed` message carries drops straight in); only when an attempt is dispatched are
 * they opened and sealed again for transit, under the internal secret and for the job's workspace.
 */
export class JobCredentials {
  private readonly atRest: Sealer | undefined;
  private readonly transit: Sealer;
  private readonly reader: CredentialsReader;

  constructor(masterKey: string | undefined, internalSecret: string) {
    this.atRest = masterKey ? new Sealer(masterKey, providerCredentialSealing.purpose) : undefined;
    this.transit = new Sealer(internalSecret, credentialsTransitPurpose);
    this.reader = new CredentialsReader(internalSecret);
  }

  /** Whether credentials can be kept at all (a master key is set). */
  get canKeep(): boolean {
    return this.atRest !== undefined;
  }

  /**
   * The credentials a job arrived with (opened from `x-gw-credentials`), sealed at rest. Without a
   * master key nothing could keep them safely, so the job is refused and nothing is stored.
   */
  seal(workspaceId: string, credentials: Record<string, string>): StoredCredentials {
    if (!this.atRest) {
      throw new GatewayError(
        "provider_not_configured",
        "This workspace uses its own provider credentials, which async jobs can only keep when the jobs service has GATEWAY_MASTER_KEY; the gateway's operator must set it. Call the regular route meanwhile.",
      );
    }
    const stored: StoredCredentials = {};
    for (const [provider, key] of Object.entries(credentials)) {
      stored[provider] = { sealed: this.atRest.seal(key, providerCredentialSealing.context(workspaceId, provider)), version: 0 };
    }
    return stored;
  }

  /**
   * The `credentials` of an attempt's work message: what the job holds now, sealed for transit, or
   * undefined when it holds none (the platform's are used, as for a new call). Credentials that do
   * not open are never dropped in favour of the platform's: the job cannot run, and this throws.
   */
  forWork(workspaceId: string, stored: StoredCredentials | null): string | undefined {
    const entries = Object.entries(stored ?? {}).filter(([, entry]) => entry.sealed !== undefined);
    if (entries.length === 0) return undefined;
    const open: Record<string, string> = {};
    for (const [provider, entry] of entries) {
      const key = this.atRest?.open(entry.sealed as string, providerCredentialSealing.context(workspaceId, provider));
      if (key === undefined) {
        throw new GatewayError(
          "provider_not_configured",
          `The workspace's own credential for \`${provider}\` kept with this job could not be opened (the jobs service's GATEWAY_MASTER_KEY is unset or differs from ingress's), so the job was not run; the platform's credential is never used in its place`,
        );
      }
      open[provider] = key;
    }
    return this.transit.seal(JSON.stringify(open), workspaceId);
  }

  /**
   * A batch line's credentials as ingress gave them at admission (sealed for transit), sealed at
   * rest; refused, as a job's, without a master key.
   */
  sealHeader(workspaceId: string, header: string): StoredCredentials | undefined {
    const opened = this.reader.read(header, workspaceId);
    return opened ? this.seal(workspaceId, opened) : undefined;
  }

  /**
   * A header kept by a job created before migration 0004, sealed at rest; undefined when there is
   * no master key or it does not open (the job then keeps it and runs with it as before).
   */
  fromTransit(workspaceId: string, header: string): StoredCredentials | undefined {
    if (!this.atRest) return undefined;
    try {
      return this.sealHeader(workspaceId, header);
    } catch {
      return undefined;
    }
  }
}
